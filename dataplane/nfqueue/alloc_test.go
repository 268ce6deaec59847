package nfqueue

import (
	"encoding/binary"
	"testing"
)

// batchOf builds count datagrams of UDP-like payloads as the kernel sends
// them, with the packet ids 1..count.
func batchOf(count, payloadLen int) [][]byte {
	ds := make([][]byte, count)
	for i := range ds {
		payload := make([]byte, payloadLen)
		payload[0] = 0x45
		binary.BigEndian.PutUint16(payload[22:], uint16(5000+i)) // UDP destination port
		ds[i] = packetMsg(uint32(i+1), 0, payload)
	}
	return ds
}

// portMarker is the integration test's policy: mark = 1 + dst port % 3.
type portMarker struct{}

func (portMarker) Handle(p *Packet, v *Verdict) {
	if len(p.Payload) < 24 {
		return
	}
	v.Action, v.SetMark = Accept, true
	v.Mark = 1 + uint32(binary.BigEndian.Uint16(p.Payload[22:]))%3
}

func runBatch(b *batch, ds [][]byte) {
	b.reset()
	for _, d := range ds {
		b.datagram(d)
	}
}

func TestBatchAllocatesNothing(t *testing.T) {
	ds := batchOf(DefaultBatchSize, 128)
	b := newBatch(3, DefaultBatchSize)
	b.handler = portMarker{}
	allocs := testing.AllocsPerRun(100, func() { runBatch(b, ds) })
	if allocs != 0 {
		t.Fatalf("%v allocations per batch of %d packets, want 0", allocs, len(ds))
	}
	if b.delta.Accepted != uint64(len(ds)) || len(decodeVerdicts(t, b.out)) != len(ds) {
		t.Fatalf("batch accepted %d, want %d", b.delta.Accepted, len(ds))
	}
}

func TestReceiverDatagramAllocatesNothing(t *testing.T) {
	r := newReceiver(4, 256)
	r.hdrs[1].n = 300 // larger than the buffer: MSG_TRUNC
	allocs := testing.AllocsPerRun(100, func() {
		for i := range r.hdrs {
			if d, ok := r.datagram(i); !ok || len(d) > 256 {
				t.Fatal("datagram out of bounds")
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations, want 0", allocs)
	}
}

// BenchmarkBatch measures parse + handler + verdict encoding per packet.
func BenchmarkBatch(b *testing.B) {
	ds := batchOf(DefaultBatchSize, 128)
	bt := newBatch(3, DefaultBatchSize)
	bt.handler = portMarker{}
	b.ReportAllocs()
	for b.Loop() {
		runBatch(bt, ds)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ds)), "ns/packet")
}
