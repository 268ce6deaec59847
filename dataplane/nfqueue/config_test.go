package nfqueue

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		opts    []Option
		wantErr bool
	}{
		{"defaults", nil, false},
		{"all set", []Option{WithQueueMaxLen(10), WithSocketBuffers(0, 1<<20),
			WithCopyRange(MaxCopyRange), WithBatchSize(1), WithGSO(false), WithLockOSThread()}, false},
		{"zero queue length", []Option{WithQueueMaxLen(0)}, true},
		{"zero copy range", []Option{WithCopyRange(0)}, true},
		{"copy range too large", []Option{WithCopyRange(MaxCopyRange + 1)}, true},
		{"zero batch", []Option{WithBatchSize(0)}, true},
		{"huge batch", []Option{WithBatchSize(4096)}, true},
		{"negative buffer", []Option{WithSocketBuffers(-1, 0)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := defaultConfig()
			for _, o := range tt.opts {
				o(&cfg)
			}
			if err := cfg.validate(); (err != nil) != tt.wantErr {
				t.Errorf("validate() = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestConfigMessage(t *testing.T) {
	for _, gso := range []bool{true, false} {
		cfg := defaultConfig()
		cfg.gso, cfg.copyRange, cfg.queueMaxLen = gso, 300, 999
		m := configMessage(12, 77, &cfg)
		ne, be := binary.NativeEndian, binary.BigEndian
		if int(ne.Uint32(m)) != len(m) || ne.Uint16(m[4:]) != unix.NFNL_SUBSYS_QUEUE<<8|2 ||
			ne.Uint16(m[6:]) != unix.NLM_F_REQUEST|unix.NLM_F_ACK || ne.Uint32(m[8:]) != 77 ||
			be.Uint16(m[18:]) != 12 {
			t.Fatalf("header %x", m[:20])
		}
		attrs := map[uint16][]byte{}
		for a := m[20:]; len(a) > 0; {
			n := int(ne.Uint16(a))
			attrs[ne.Uint16(a[2:])] = a[4:n]
			a = a[(n+3)&^3:]
		}
		wantFlags := uint32(0)
		if gso {
			wantFlags = 4
		}
		switch {
		case attrs[1][0] != 1:
			t.Errorf("command %x, want bind", attrs[1])
		case be.Uint32(attrs[2]) != 300 || attrs[2][4] != 2:
			t.Errorf("params %x, want range 300 mode packet", attrs[2])
		case be.Uint32(attrs[3]) != 999:
			t.Errorf("queue max %x", attrs[3])
		case be.Uint32(attrs[4])&1 == 0 || be.Uint32(attrs[5])&1 != 0:
			t.Errorf("fail-open must be masked and cleared: mask %x flags %x", attrs[4], attrs[5])
		case be.Uint32(attrs[5]) != wantFlags:
			t.Errorf("flags %x, want %x", attrs[5], wantFlags)
		}
	}
}
