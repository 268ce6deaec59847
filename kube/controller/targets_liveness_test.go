package controller

import (
	"net/netip"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/kube/targetpod"
	"github.com/sllbrd/sllbrd/model"
)

const ms = time.Millisecond

func bfd(interval time.Duration, multiplier int) model.Liveness {
	return model.Liveness{Interval: interval, Multiplier: multiplier, HoldDown: time.Second, Probe: model.ProbeBFD}
}

// TestBFDTimingsStrictest: per Gateway the Service with the shorter
// Detection wins, then the shorter Interval, whatever the order the
// Services come in; ICMP and off Services count for nothing, and a Gateway
// with only those gets no timing.
func TestBFDTimingsStrictest(t *testing.T) {
	icmp := model.Liveness{Interval: 10 * ms, Multiplier: 1}
	tests := []struct {
		name     string
		services []model.Liveness
		want     *targetpod.GatewayLiveness // nil: no entry
	}{
		{"one", []model.Liveness{bfd(200*ms, 4)}, &targetpod.GatewayLiveness{IntervalMilliseconds: 200, Multiplier: 4}},
		{"shorter detection", []model.Liveness{bfd(100*ms, 5), bfd(200*ms, 2)}, &targetpod.GatewayLiveness{IntervalMilliseconds: 200, Multiplier: 2}},
		{"same detection, shorter interval", []model.Liveness{bfd(200*ms, 3), bfd(100*ms, 6), bfd(300*ms, 2)},
			&targetpod.GatewayLiveness{IntervalMilliseconds: 100, Multiplier: 6}},
		{"icmp and off ignored", []model.Liveness{icmp, {}, bfd(1*time.Second, 3)}, &targetpod.GatewayLiveness{IntervalMilliseconds: 1000, Multiplier: 3}},
		{"icmp only", []model.Liveness{icmp}, nil},
		{"off only", []model.Liveness{{}, {Probe: model.ProbeBFD}}, nil},
	}
	for _, tt := range tests {
		// Every order of the Services gives the same answer.
		for shift := range tt.services {
			b := bfdTimings{}
			for i := range tt.services {
				b.add("sllb-a", tt.services[(i+shift)%len(tt.services)])
			}
			b.add("sllb-b", bfd(10*ms, 1)) // another Gateway's Service counts for its own only
			got := b.liveness()
			switch g, ok := got["sllb-a"]; {
			case tt.want == nil && ok:
				t.Errorf("%s (order %d): %+v, want none", tt.name, shift, *g)
			case tt.want != nil && (!ok || *g != *tt.want):
				t.Errorf("%s (order %d): %+v (present %v), want %+v", tt.name, shift, g, ok, *tt.want)
			}
			if g := got["sllb-b"]; g == nil || *g != (targetpod.GatewayLiveness{IntervalMilliseconds: 10, Multiplier: 1}) {
				t.Errorf("%s: sllb-b %+v", tt.name, g)
			}
		}
	}
}

// TestGatewayLivenessRounding: whole milliseconds are kept, a fraction
// rounds up, and where rounding up would take the detection time past its
// bound the interval is the longest within it; every result is accepted
// by the target's own check, as the controller writes it (targetpod.Next,
// then ParseDesired).
func TestGatewayLivenessRounding(t *testing.T) {
	const us = time.Microsecond
	tests := []struct {
		in     model.Liveness
		wantMs int64
	}{
		{bfd(10*ms, 1), 10},
		{bfd(10*ms+1, 3), 11}, // one nanosecond over rounds up
		{bfd(10500*us, 4), 11},
		{bfd(199999*us, 4), 200},
		{bfd(10*time.Second, 6), 10000},
		{bfd(9999999*us, 6), 10000},
		{bfd(1200*ms, 50), 1200},         // exactly a minute
		{bfd(8571400*us, 7), 8571},       // 8572ms × 7 is over a minute: 8571ms
		{bfd(1199999*us, 50), 1200},      // 1200ms × 50 is a minute: kept
		{bfd(1999999*us, 30), 2000},      // 2000ms × 30 is a minute
		{bfd(6666666*us, 9), 6666},       // 6667ms × 9 is 60.003s
		{bfd(5*time.Millisecond, 3), 10}, // below the bound (not from the annotation): clamped up
	}
	for _, tt := range tests {
		got := gatewayLiveness(tt.in)
		if got.IntervalMilliseconds != tt.wantMs || got.Multiplier != tt.in.Multiplier {
			t.Errorf("%v × %d: %+v, want %d ms × %d", tt.in.Interval, tt.in.Multiplier, *got, tt.wantMs, tt.in.Multiplier)
		}
		g := targetpod.Gateway{Name: "sllb-a", Subnets: []netip.Prefix{netip.MustParsePrefix("169.111.100.0/24")},
			VIPs: []netip.Prefix{netip.MustParsePrefix("20.0.0.1/32")}, Liveness: got,
			NextHops: targetpod.NextHops{IPv4: []netip.Addr{netip.MustParseAddr("169.111.100.1")}}}
		value, _, err := targetpod.Next("", []targetpod.Gateway{g})
		if err == nil {
			_, err = targetpod.ParseDesired(value)
		}
		if err != nil {
			t.Errorf("%v × %d: %+v refused by the target: %v", tt.in.Interval, tt.in.Multiplier, *got, err)
		}
	}
}

// TestSetLiveness: each admitted Gateway gets its own value, none when it
// has none (a value left from earlier is cleared).
func TestSetLiveness(t *testing.T) {
	l := &targetpod.GatewayLiveness{IntervalMilliseconds: 100, Multiplier: 3}
	gws := []targetpod.Gateway{{Name: "a"}, {Name: "b", Liveness: l}}
	setLiveness(gws, map[string]*targetpod.GatewayLiveness{"a": l, "c": l})
	if gws[0].Liveness != l || gws[1].Liveness != nil {
		t.Errorf("a %+v, b %+v; want a set, b none", gws[0].Liveness, gws[1].Liveness)
	}
}
