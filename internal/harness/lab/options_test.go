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

func TestOptionsPointToPoint(t *testing.T) {
	for _, tc := range []struct {
		lbs, targets int
		err          string
	}{{0, 0, ""}, {1, 1, ""}, {2, 1, "PointToPoint with 2 LBs"}, {1, 3, "and 3 targets"}, {-1, 1, "want 1 of each"}} {
		o, err := Options{PointToPoint: true, LBs: tc.lbs, Targets: tc.targets}.withDefaults()
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("LBs %d, targets %d: error %v, want %q", tc.lbs, tc.targets, err, tc.err)
		case tc.err == "" && (err != nil || o.LBs != 1 || o.Targets != 1):
			t.Errorf("LBs %d, targets %d: %d, %d, %v; want 1, 1", tc.lbs, tc.targets, o.LBs, o.Targets, err)
		}
	}
}
