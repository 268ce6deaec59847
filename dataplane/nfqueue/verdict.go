package nfqueue

import (
	"encoding/binary"
	"errors"
	"slices"

	"golang.org/x/sys/unix"
)

var errHoldRelease = errors.New("nfqueue: Release needs Accept or Drop, not Hold")

// appendVerdict appends one NFQNL_MSG_VERDICT message for packet id of the
// given queue to buf and returns the extended slice. It allocates only when
// buf lacks capacity. The caller never passes Hold.
func appendVerdict(buf []byte, queue uint16, id uint32, v *Verdict) []byte {
	n := verdictMsgLen
	setMark := v.SetMark && v.Action == Accept
	if setMark {
		n += verdictMarkLen
	}
	off := len(buf)
	buf = slices.Grow(buf, n)[:off+n]
	m := buf[off:]
	ne, be := binary.NativeEndian, binary.BigEndian
	ne.PutUint32(m[0:], uint32(n))
	ne.PutUint16(m[4:], unix.NFNL_SUBSYS_QUEUE<<8|msgVerdict)
	ne.PutUint16(m[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(m[8:], 0)  // sequence: no acknowledgement is asked for
	ne.PutUint32(m[12:], 0) // port id: the kernel fills it in
	m[16] = unix.AF_UNSPEC
	m[17] = unix.NFNETLINK_V0
	be.PutUint16(m[18:], queue)
	ne.PutUint16(m[20:], attrHeaderLen+verdictHdrLen)
	ne.PutUint16(m[22:], attrVerdictHdr)
	verdict := uint32(nfDrop)
	if v.Action == Accept {
		verdict = nfAccept
	}
	be.PutUint32(m[24:], verdict)
	be.PutUint32(m[28:], id)
	if setMark {
		ne.PutUint16(m[32:], attrHeaderLen+4)
		ne.PutUint16(m[34:], attrMark)
		be.PutUint32(m[36:], v.Mark)
	}
	return buf
}
