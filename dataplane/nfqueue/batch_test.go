package nfqueue

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// markByPort accepts every packet with mark 1 + (last payload byte % 3),
// drops packets whose first byte is 0xdd and holds those starting 0xee.
type markByPort struct{ seen []uint32 }

func (h *markByPort) Handle(p *Packet, v *Verdict) {
	h.seen = append(h.seen, p.ID)
	switch {
	case len(p.Payload) == 0:
	case p.Payload[0] == 0xdd:
		v.Action = Drop
	case p.Payload[0] == 0xee:
		v.Action = Hold
	default:
		v.Action, v.SetMark = Accept, true
		v.Mark = 1 + uint32(p.Payload[len(p.Payload)-1])%3
	}
}

func concat(msgs ...[]byte) []byte { return bytes.Join(msgs, nil) }

func TestBatchDatagram(t *testing.T) {
	malformed := packetMsg(9, 0, []byte{0x45})
	binary.NativeEndian.PutUint16(malformed[20+12:], 100) // mark attribute overruns
	tests := []struct {
		name      string
		datagrams [][]byte
		wantSeen  []uint32
		want      []sentVerdict
		wantStats Stats
	}{
		{"accept with marks", [][]byte{packetMsg(1, 0, []byte{0x45, 4}), packetMsg(2, 0, []byte{0x45, 5})},
			[]uint32{1, 2},
			[]sentVerdict{{id: 1, verdict: 1, mark: 2, hasMark: true}, {id: 2, verdict: 1, mark: 3, hasMark: true}},
			Stats{Packets: 2, Accepted: 2, Largest: 2}},
		{"drop, hold and untouched", [][]byte{
			packetMsg(3, 0, []byte{0xdd}), packetMsg(4, 0, []byte{0xee}), packetMsg(5, 0, nil)},
			[]uint32{3, 4, 5},
			[]sentVerdict{{id: 3, verdict: 0}, {id: 5, verdict: 0}},
			Stats{Packets: 3, Dropped: 2, Held: 1, Largest: 1}},
		{"several messages in one datagram", [][]byte{
			concat(packetMsg(6, 0, []byte{0x45, 0}), errorMsg(0, 0), packetMsg(7, 0, []byte{0xdd}))},
			[]uint32{6, 7},
			[]sentVerdict{{id: 6, verdict: 1, mark: 1, hasMark: true}, {id: 7, verdict: 0}},
			Stats{Packets: 2, Accepted: 1, Dropped: 1, Largest: 2}},
		{"GSO aggregate", [][]byte{nlMessage(typePacket, 0,
			testAttr{attrPacketHdr, pktHdr(11, 0x0800, 0)}, testAttr{attrSkbInfo, be32(SkbGSO | SkbCsumNotReady)},
			testAttr{attrCapLen, be32(130000)}, testAttr{attrPayload, []byte{0x45, 1}})},
			[]uint32{11}, []sentVerdict{{id: 11, verdict: 1, mark: 2, hasMark: true}},
			Stats{Packets: 1, Accepted: 1, GSO: 1, Largest: 130000}},
		{"malformed packet is dropped unseen", [][]byte{malformed},
			nil, []sentVerdict{{id: 9, verdict: 0}},
			Stats{Packets: 1, Dropped: 1, OwnDrops: 1, ParseErrors: 1}},
		{"truncated datagram is dropped unseen", [][]byte{packetMsg(10, 0, make([]byte, 64))[:60]},
			nil, []sentVerdict{{id: 10, verdict: 0}},
			Stats{Packets: 1, Dropped: 1, OwnDrops: 1, ParseErrors: 1}},
		{"packet without id gets no verdict", [][]byte{nlMessage(typePacket, 0)},
			nil, nil, Stats{Packets: 1, ParseErrors: 1}},
		{"kernel rejects a verdict", [][]byte{errorMsg(unix.ENOENT, 0)},
			nil, nil, Stats{VerdictErrors: 1}},
		{"garbage", [][]byte{{1, 2, 3}, make([]byte, 16)}, nil, nil, Stats{ParseErrors: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &markByPort{}
			b := newBatch(0, 4)
			b.handler = h
			b.reset()
			for _, d := range tt.datagrams {
				b.datagram(d)
			}
			if !reflect.DeepEqual(h.seen, tt.wantSeen) {
				t.Errorf("handler saw %v, want %v", h.seen, tt.wantSeen)
			}
			if got := decodeVerdicts(t, b.out); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("verdicts %+v\nwant     %+v", got, tt.want)
			}
			if b.delta != tt.wantStats {
				t.Errorf("stats %+v\nwant  %+v", b.delta, tt.wantStats)
			}
		})
	}
}

func TestAppendVerdictWire(t *testing.T) {
	got := appendVerdict(nil, 0x0102, 0x0a0b0c0d, &Verdict{Action: Accept, SetMark: true, Mark: 0x11223344})
	// Netlink and attribute headers are in the host's byte order, the
	// nfqueue fields big-endian.
	ne := binary.NativeEndian
	want := ne.AppendUint32(nil, 40)                             // nlmsghdr: len
	want = ne.AppendUint16(want, 3<<8|1)                         // type NFNL_SUBSYS_QUEUE<<8 | NFQNL_MSG_VERDICT
	want = ne.AppendUint16(want, 1)                              // NLM_F_REQUEST
	want = append(want, 0, 0, 0, 0, 0, 0, 0, 0)                  // seq, pid
	want = append(want, 0, 0, 0x01, 0x02)                        // nfgenmsg: AF_UNSPEC, v0, queue (big-endian)
	want = append(ne.AppendUint16(ne.AppendUint16(want, 12), 2), // NFQA_VERDICT_HDR: NF_ACCEPT, id
		0, 0, 0, 1, 0x0a, 0x0b, 0x0c, 0x0d)
	want = append(ne.AppendUint16(ne.AppendUint16(want, 8), 3), 0x11, 0x22, 0x33, 0x44) // NFQA_MARK
	if !bytes.Equal(got, want) {
		t.Errorf("accept with mark:\n got %x\nwant %x", got, want)
	}
	got = appendVerdict(nil, 0, 7, &Verdict{Action: Drop, SetMark: true, Mark: 5})
	if len(got) != 32 || binary.NativeEndian.Uint32(got) != 32 || binary.BigEndian.Uint32(got[24:]) != 0 {
		t.Errorf("drop must carry no mark and NF_DROP: %x", got)
	}
}

func TestReleaseRejectsHold(t *testing.T) {
	var q Queue // no socket is touched before the action is checked
	for _, a := range []Action{Hold, Action(9)} {
		if err := q.Release(1, Verdict{Action: a}); err != errHoldRelease {
			t.Errorf("Release(%v) = %v, want errHoldRelease", a, err)
		}
	}
}
