package model

import (
	"testing"
	"time"
)

func TestLiveness(t *testing.T) {
	tests := []struct {
		l         Liveness
		off       bool
		detection time.Duration
		text      string
	}{
		{Liveness{}, true, 0, "off"},
		{Liveness{Multiplier: 4, HoldDown: time.Second}, true, 0, "off"}, // Interval alone decides
		{Liveness{Interval: 200 * time.Millisecond, Multiplier: 4, HoldDown: 5 * time.Second}, false,
			800 * time.Millisecond, "interval=200ms,multiplier=4,hold-down=5s"},
		{Liveness{Interval: 10 * time.Millisecond, Multiplier: 1}, false, 10 * time.Millisecond,
			"interval=10ms,multiplier=1,hold-down=0s"},
		{Liveness{Interval: 1500 * time.Millisecond, Multiplier: 40, HoldDown: 10 * time.Minute}, false,
			time.Minute, "interval=1.5s,multiplier=40,hold-down=10m0s"},
		{Liveness{Interval: 100 * time.Millisecond, Multiplier: 3, HoldDown: time.Second, Probe: ProbeBFD}, false,
			300 * time.Millisecond, "interval=100ms,multiplier=3,hold-down=1s,probe=bfd"},
		{Liveness{Probe: ProbeBFD}, true, 0, "off"},
	}
	for _, tt := range tests {
		if got := tt.l.Off(); got != tt.off {
			t.Errorf("%+v.Off() = %v, want %v", tt.l, got, tt.off)
		}
		if got := tt.l.Detection(); got != tt.detection {
			t.Errorf("%+v.Detection() = %v, want %v", tt.l, got, tt.detection)
		}
		if got := tt.l.String(); got != tt.text {
			t.Errorf("%+v.String() = %q, want %q", tt.l, got, tt.text)
		}
	}
}
