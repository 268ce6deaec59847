package lab

import (
	"strings"
	"testing"
)

func TestOptionsLBs(t *testing.T) {
	for _, tc := range []struct {
		lbs, want int
		err       string
	}{{0, 1, ""}, {3, 3, ""}, {4, 0, "LBs = 4, want 1..3"}, {-1, 0, "want 1..3"}} {
		o, err := Options{LBs: tc.lbs}.withDefaults()
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("LBs %d: error %v, want %q", tc.lbs, err, tc.err)
		case tc.err == "" && (err != nil || o.LBs != tc.want):
			t.Errorf("LBs %d: %d, %v; want %d", tc.lbs, o.LBs, err, tc.want)
		}
	}
	// Empty port lists stay empty (no UDP responder), nil ones get defaults.
	o, err := Options{UDPPorts: []uint16{}}.withDefaults()
	if err != nil || len(o.UDPPorts) != 0 || len(o.TCPPorts) != len(DefaultPorts) || len(o.EchoPorts) != 0 {
		t.Errorf("ports %v %v %v, %v", o.UDPPorts, o.TCPPorts, o.EchoPorts, err)
	}
}
