package nfqueue

import (
	"testing"
)

// FuzzParse feeds arbitrary datagrams through the parse-handle-encode path:
// it must never panic, every Payload must lie inside the datagram, and the
// verdict buffer must hold exactly one well-formed verdict per counted one.
func FuzzParse(f *testing.F) {
	f.Add(packetMsg(1, 2, []byte{0x45, 0, 1, 2}))
	f.Add(concat(packetMsg(1, 0, nil), errorMsg(2, 0), packetMsg(3, 0, []byte{0xee})))
	f.Add(packetMsg(4, 0, make([]byte, 40))[:50])
	f.Add(errorMsg(0, 1)[:20])
	f.Fuzz(func(t *testing.T, d []byte) {
		b := newBatch(0, 1)
		b.handler = HandlerFunc(func(p *Packet, v *Verdict) {
			if len(p.Payload) > len(d) || p.Length < len(p.Payload) {
				t.Fatalf("payload %d bytes, length %d, datagram %d", len(p.Payload), p.Length, len(d))
			}
			v.Action = Action(p.ID % 4) // also an invalid action: must drop
			v.SetMark, v.Mark = true, p.ID
		})
		b.reset()
		b.datagram(d)
		vs := decodeVerdicts(t, b.out)
		if uint64(len(vs)) != b.delta.Accepted+b.delta.Dropped {
			t.Fatalf("%d verdicts encoded, %d counted", len(vs), b.delta.Accepted+b.delta.Dropped)
		}
		if b.delta.Accepted+b.delta.Dropped+b.delta.Held > b.delta.Packets {
			t.Fatalf("more decisions than packets: %+v", b.delta)
		}
	})
}
