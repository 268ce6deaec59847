package lab

import (
	"net/netip"
	"testing"
	"time"
)

// TestPacerNeverSendsEarly: after wait(n) at least n packet intervals have
// passed since the start, so a paced sender never exceeds its rate.
func TestPacerNeverSendsEarly(t *testing.T) {
	tests := []struct {
		name        string
		nsPerPacket float64
		sent        uint64
		minElapsed  time.Duration
	}{
		{"unpaced", 0, 1_000_000, 0},
		{"first packet is due at once", 1e5, 0, 0},
		{"100 kpps, 64 packets", 1e4, 64, 640 * time.Microsecond},
		{"10 kpps, 20 packets", 1e5, 20, 2 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := pacer{start: time.Now(), nsPerPacket: tc.nsPerPacket}
			p.wait(tc.sent)
			if got := time.Since(p.start); got < tc.minElapsed {
				t.Errorf("wait(%d) returned after %v, want at least %v", tc.sent, got, tc.minElapsed)
			}
		})
	}
}

func TestBlastOptionsRejectNegativeRate(t *testing.T) {
	o := BlastOptions{VIP: netip.MustParseAddr("20.0.0.1"), Rate: -1}
	if _, err := o.withDefaults(defaultBlastPort); err == nil {
		t.Error("a negative rate was accepted")
	}
	o.Rate = 0
	if _, err := o.withDefaults(defaultBlastPort); err != nil {
		t.Errorf("rate 0 (unpaced): %v", err)
	}
}
