package targetpod

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/targetbfd"
	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube"
)

// livenessRecorder is a Liveness that records every Set and finds down
// the next hops setDown gives.
type livenessRecorder struct {
	mu     sync.Mutex
	sets   [][]targetbfd.Gateway
	down   []netip.Addr
	downCh chan struct{}
}

func (r *livenessRecorder) Down() []netip.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.down
}

func (r *livenessRecorder) DownChanged() <-chan struct{} { return r.channel() }

func (r *livenessRecorder) channel() chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.downCh == nil {
		r.downCh = make(chan struct{}, 1)
	}
	return r.downCh
}

// setDown makes hops the next hops found down, and signals it.
func (r *livenessRecorder) setDown(hops ...string) {
	ch := r.channel()
	r.mu.Lock()
	r.down = nil
	for _, h := range hops {
		r.down = append(r.down, netip.MustParseAddr(h))
	}
	r.mu.Unlock()
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (r *livenessRecorder) Set(gws []targetbfd.Gateway) {
	r.mu.Lock()
	r.sets = append(r.sets, gws)
	r.mu.Unlock()
}

func (r *livenessRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sets)
}

func (r *livenessRecorder) last() []targetbfd.Gateway {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sets[len(r.sets)-1]
}

// startLiveAgent runs a node daemon's PodAgent with liveness live until
// the test ends.
func startLiveAgent(t *testing.T, c targetnet.Configurer, rec *statusRecorder, live Liveness) *PodAgent {
	t.Helper()
	a := NewPodAgent(NodeAgent("n1"), c, rec.write, WithLogger(slog.New(slog.DiscardHandler)), WithLiveness(live),
		WithLoopOptions(targetnet.WithBackoff(time.Millisecond, 20*time.Millisecond)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return a
}

// desiredLiveness is generation gen of two Gateways, sllb-a asking for
// liveness (when l is set) and sllb-b not.
func desiredLiveness(gen int64, l *GatewayLiveness) string {
	sub := []netip.Prefix{netip.MustParsePrefix("169.111.100.0/24")}
	a := Gateway{Name: "sllb-a", Table: 50000, Subnets: sub, VIPs: []netip.Prefix{netip.MustParsePrefix("20.0.0.1/32")},
		NextHops: NextHops{IPv4: []netip.Addr{netip.MustParseAddr("169.111.100.1"), netip.MustParseAddr("169.111.100.2")}}, Liveness: l}
	b := Gateway{Name: "sllb-b", Table: 50001, Subnets: sub, VIPs: []netip.Prefix{netip.MustParsePrefix("20.0.0.2/32")},
		NextHops: NextHops{IPv4: []netip.Addr{netip.MustParseAddr("169.111.100.3")}}}
	return Desired{Version: SchemaVersion, Generation: gen, Gateways: []Gateway{a, b}}.Marshal()
}

// TestPodAgentHandsLivenessTheAppliedGateways: after each apply the
// liveness runner gets the Gateways with Liveness, with the next hops and
// interfaces the kernel holds; none once liveness is gone, the annotation
// removed, or the pod not the agent's; nothing when the kernel could not
// be read.
func TestPodAgentHandsLivenessTheAppliedGateways(t *testing.T) {
	c, rec, live := &fakeConfigurer{}, &statusRecorder{}, &livenessRecorder{}
	a := startLiveAgent(t, c, rec, live)

	a.Seen(podOf("", desiredLiveness(1, &GatewayLiveness{IntervalMilliseconds: 150, Multiplier: 4}), ""))
	eventually(t, "a Set after the first apply", func() bool { return live.count() == 1 })
	want := []targetbfd.Gateway{{Name: "sllb-a", Interval: 150 * time.Millisecond, Multiplier: 4,
		Subnets:    []netip.Prefix{netip.MustParsePrefix("169.111.100.0/24")},
		NextHops:   []netip.Addr{netip.MustParseAddr("169.111.100.1"), netip.MustParseAddr("169.111.100.2")},
		Interfaces: map[targetnet.Family]string{targetnet.IPv4: "net1"}}}
	if got := live.last(); !reflect.DeepEqual(got, want) {
		t.Errorf("Set(%+v), want %+v", got, want)
	}

	// The kernel cannot be read: the sessions stay as they are.
	c.set(errors.New("netlink: no buffer space"), nil)
	a.Seen(podOf("", desiredLiveness(2, &GatewayLiveness{IntervalMilliseconds: 100, Multiplier: 3}), ""))
	eventually(t, "a failed apply", func() bool { return c.count() >= 3 })
	if n := live.count(); n != 1 {
		t.Errorf("%d Sets after applies that read nothing", n)
	}
	c.set(nil, nil)
	eventually(t, "generation 2's Set", func() bool { return live.count() == 2 })
	if got := live.last(); len(got) != 1 || got[0].Interval != 100*time.Millisecond || got[0].Multiplier != 3 {
		t.Errorf("generation 2: Set(%+v)", got)
	}

	for _, step := range []struct{ name, mode, desired string }{
		{"liveness gone", "", desiredLiveness(3, nil)},
		{"liveness back, then the annotation removed", "", ""},
		{"liveness back, then the pod marked for the sidecar", kube.TargetAgentSidecar, desiredLiveness(5, &GatewayLiveness{IntervalMilliseconds: 100, Multiplier: 3})},
	} {
		if step.name != "liveness gone" {
			// n is read before Seen: the agent may apply before Seen returns.
			n := live.count()
			a.Seen(podOf("", desiredLiveness(4, &GatewayLiveness{IntervalMilliseconds: 100, Multiplier: 3}), ""))
			eventually(t, step.name+": liveness back", func() bool { return live.count() > n && len(live.last()) == 1 })
		}
		n := live.count()
		a.Seen(podOf(step.mode, step.desired, ""))
		eventually(t, step.name, func() bool { return live.count() > n })
		if got := live.last(); len(got) != 0 {
			t.Errorf("%s: Set(%+v), want none", step.name, got)
		}
	}
}
