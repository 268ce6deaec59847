package liveness

import (
	"bytes"
	"testing"
	"unsafe"
)

// FuzzDecode feeds arbitrary bytes to both decoders: they must not panic,
// and what they accept must be what it claims (data inside the input, the
// IPv4 checksum right, a request re-encoded byte for byte).
func FuzzDecode(f *testing.F) {
	reply := AppendEchoRequest(nil, false, 1, 2, data8)
	toReply(reply, false)
	f.Add(ipv4Packet(a4, us, reply))
	f.Add(ipv4Packet(a4, us, AppendEchoRequest(nil, false, 3, 4, nil)))
	f.Add(AppendEchoRequest(nil, true, 5, 6, data8))
	f.Add([]byte{0x45})
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Echo
		if err := e.DecodeIPv4(b); err == nil {
			ihl := int(b[0]&0x0f) * 4
			msg := b[ihl : int(b[2])<<8|int(b[3])]
			if e.V6 || !contains(b, e.Data) || checksum(msg, 0) != 0 {
				t.Fatalf("accepted %x as %+v", b, e)
			}
			if !e.IsReply() && e.Code == 0 && !bytes.Equal(AppendEchoRequest(nil, false, e.ID, e.Seq, e.Data), msg) {
				t.Fatalf("request %x does not re-encode", msg)
			}
		}
		if err := e.DecodeICMPv6(b); err == nil {
			if !e.V6 || !contains(b, e.Data) || e.Src.IsValid() {
				t.Fatalf("accepted %x as %+v", b, e)
			}
			re := AppendEchoRequest(nil, true, e.ID, e.Seq, e.Data)
			if !e.IsReply() && e.Code == 0 && (!bytes.Equal(re[:2], b[:2]) || !bytes.Equal(re[4:], b[4:])) {
				t.Fatalf("request %x does not re-encode", b)
			}
		}
	})
}

// contains reports whether sub lies within b's bytes.
func contains(b, sub []byte) bool {
	if len(sub) == 0 {
		return true
	}
	if len(b) == 0 {
		return false
	}
	lo, hi := uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&b[len(b)-1]))
	s, e := uintptr(unsafe.Pointer(&sub[0])), uintptr(unsafe.Pointer(&sub[len(sub)-1]))
	return s >= lo && e <= hi
}
