package nfqueue

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// Test-side netlink encoding and decoding, written against the kernel's
// layouts independently of the package's own code.

type testAttr struct {
	typ uint16
	val []byte
}

func be32(x uint32) []byte { return binary.BigEndian.AppendUint32(nil, x) }

func pktHdr(id uint32, proto uint16, hook uint8) []byte {
	b := binary.BigEndian.AppendUint32(nil, id)
	b = binary.BigEndian.AppendUint16(b, proto)
	return append(b, hook)
}

// nlMessage builds a netlink message of type typ with an nfgenmsg for queue
// and the given attributes.
func nlMessage(typ uint16, queue uint16, attrs ...testAttr) []byte {
	b := make([]byte, 20)
	binary.NativeEndian.PutUint16(b[4:], typ)
	b[16] = unix.AF_UNSPEC
	binary.BigEndian.PutUint16(b[18:], queue)
	for _, a := range attrs {
		b = binary.NativeEndian.AppendUint16(b, uint16(4+len(a.val)))
		b = binary.NativeEndian.AppendUint16(b, a.typ)
		b = append(b, a.val...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
	}
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	return b
}

// packetMsg builds a typical NFQNL_MSG_PACKET.
func packetMsg(id, mark uint32, payload []byte) []byte {
	return nlMessage(typePacket, 0,
		testAttr{attrPacketHdr, pktHdr(id, 0x0800, 0)},
		testAttr{attrMark, be32(mark)},
		testAttr{attrIfindexIn, be32(3)},
		testAttr{attrPayload, payload})
}

// errorMsg builds an NLMSG_ERROR answering sequence seq.
func errorMsg(errno unix.Errno, seq uint32) []byte {
	b := make([]byte, 16+4+16)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], unix.NLMSG_ERROR)
	binary.NativeEndian.PutUint32(b[16:], uint32(-int32(errno)))
	binary.NativeEndian.PutUint32(b[16+4+8:], seq)
	return b
}

type sentVerdict struct {
	queue   uint16
	id      uint32
	verdict uint32
	mark    uint32
	hasMark bool
}

// decodeVerdicts decodes a buffer of NFQNL_MSG_VERDICT messages.
func decodeVerdicts(t testing.TB, b []byte) []sentVerdict {
	t.Helper()
	var out []sentVerdict
	for len(b) > 0 {
		if len(b) < 20 {
			t.Fatalf("verdict buffer: %d trailing bytes", len(b))
		}
		n := int(binary.NativeEndian.Uint32(b))
		typ := binary.NativeEndian.Uint16(b[4:])
		flags := binary.NativeEndian.Uint16(b[6:])
		if n < 20 || n > len(b) || n%4 != 0 {
			t.Fatalf("verdict message length %d of %d", n, len(b))
		}
		if typ != unix.NFNL_SUBSYS_QUEUE<<8|1 || flags != unix.NLM_F_REQUEST {
			t.Fatalf("verdict message type %#x flags %#x", typ, flags)
		}
		v := sentVerdict{queue: binary.BigEndian.Uint16(b[18:])}
		for a := b[20:n]; len(a) > 0; {
			alen := int(binary.NativeEndian.Uint16(a))
			switch binary.NativeEndian.Uint16(a[2:]) {
			case 2:
				v.verdict = binary.BigEndian.Uint32(a[4:])
				v.id = binary.BigEndian.Uint32(a[8:])
			case 3:
				v.mark, v.hasMark = binary.BigEndian.Uint32(a[4:]), true
			default:
				t.Fatalf("unexpected verdict attribute %d", binary.NativeEndian.Uint16(a[2:]))
			}
			a = a[(alen+3)&^3:]
		}
		out = append(out, v)
		b = b[n:]
	}
	return out
}
