package targetpod

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube"
)

// fakeConfigurer applies nothing: it records each Desired and returns a
// Result holding all of it, or err. With gate set, each apply waits for a
// value on it.
type fakeConfigurer struct {
	mu      sync.Mutex
	applies []targetnet.Desired
	err     error
	gate    chan struct{}
}

func (f *fakeConfigurer) Apply(d targetnet.Desired) (targetnet.Result, error) {
	f.mu.Lock()
	gate, err := f.gate, f.err
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	f.applies = append(f.applies, d)
	f.mu.Unlock()
	if err != nil {
		return targetnet.Result{}, err
	}
	var res targetnet.Result
	for _, g := range d.Gateways {
		gr := targetnet.GatewayResult{Name: g.Name, Table: g.Table, VIPs: g.VIPs, NextHops: g.NextHops,
			Interfaces: map[targetnet.Family]string{targetnet.IPv4: "net1"}}
		// As targetnet (one family here): the next hops marked down leave
		// the route, unless all of them are down.
		live := slices.DeleteFunc(slices.Clone(g.NextHops), func(h netip.Addr) bool { return slices.Contains(g.Down, h) })
		switch {
		case len(live) == 0 && len(g.NextHops) > 0:
			gr.AllDown = []targetnet.Family{targetnet.IPv4}
		case len(live) < len(g.NextHops):
			gr.NextHops = live
			gr.Down = slices.DeleteFunc(slices.Clone(g.NextHops), func(h netip.Addr) bool { return slices.Contains(live, h) })
		}
		res.Gateways = append(res.Gateways, gr)
	}
	return res, nil
}

func (f *fakeConfigurer) set(err error, gate chan struct{}) {
	f.mu.Lock()
	f.err, f.gate = err, gate
	f.mu.Unlock()
}

func (f *fakeConfigurer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.applies)
}

// statusRecorder is a StatusWriter that records every value written and
// keeps the last one as the pod's annotation.
type statusRecorder struct {
	mu     sync.Mutex
	values []string
}

func (r *statusRecorder) write(_ context.Context, v string) error {
	r.mu.Lock()
	r.values = append(r.values, v)
	r.mu.Unlock()
	return nil
}

func (r *statusRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.values...)
}

func (r *statusRecorder) last() string {
	v := r.all()
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// desiredOf is the controller's annotation of generation gen with the
// given IPv4 next hops in 169.111.100.0/24.
func desiredOf(gen int64, hops ...string) string {
	g := Gateway{Name: "sllb-a", Table: 50000, Subnets: []netip.Prefix{netip.MustParsePrefix("169.111.100.0/24")},
		VIPs: []netip.Prefix{netip.MustParsePrefix("20.0.0.1/32")}}
	for _, h := range hops {
		g.NextHops.IPv4 = append(g.NextHops.IPv4, netip.MustParseAddr(h))
	}
	return Desired{Version: SchemaVersion, Generation: gen, Gateways: []Gateway{g}}.Marshal()
}

// podOf is a pod with the given annotations ("" values are left out);
// mode is the target-agent annotation.
func podOf(mode, desired, status string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-1", Annotations: map[string]string{}}}
	for k, v := range map[string]string{kube.AnnotationTargetAgent: mode, kube.AnnotationTargetNetwork: desired,
		kube.AnnotationTargetNetworkStatus: status} {
		if v != "" {
			p.Annotations[k] = v
		}
	}
	return p
}

// startPodAgent runs a PodAgent of id until the test ends.
func startPodAgent(t *testing.T, id string, c targetnet.Configurer, rec *statusRecorder, opts ...targetnet.LoopOption) *PodAgent {
	t.Helper()
	a := NewPodAgent(id, c, rec.write, WithLogger(slog.New(slog.DiscardHandler)),
		WithLoopOptions(append([]targetnet.LoopOption{targetnet.WithBackoff(time.Millisecond, 20*time.Millisecond)}, opts...)...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return a
}

// eventually waits up to 10 s for ok.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("%s: not within 10s", what)
}

// readyBy reports whether v is a status of agent saying ready.
func readyBy(v, agent string) bool {
	s, err := ParseStatus(v)
	return err == nil && s.Ready && s.Agent == agent
}

func parsed(t *testing.T, v string) Status {
	t.Helper()
	s, err := ParseStatus(v)
	if err != nil {
		t.Fatalf("%q: %v", v, err)
	}
	return s
}

// TestPodAgentWritesNoTransientNotReady: across generation changes that
// apply cleanly, every status written says ready, including while an
// apply is held back and the pod keeps changing (its own status coming
// back, another annotation); the status of each generation is written once
// its outcome is in.
func TestPodAgentWritesNoTransientNotReady(t *testing.T) {
	c, rec := &fakeConfigurer{}, &statusRecorder{}
	a := startPodAgent(t, NodeAgent("n1"), c, rec, targetnet.WithResync(5*time.Millisecond))
	a.Seen(podOf("", desiredOf(1, "169.111.100.1"), ""))
	eventually(t, "generation 1's status", func() bool { return strings.Contains(rec.last(), `"observedGeneration":1`) })
	for gen := int64(2); gen <= 6; gen++ {
		gate := make(chan struct{})
		c.set(nil, gate)
		d := desiredOf(gen, fmt.Sprintf("169.111.100.%d", gen))
		a.Seen(podOf("", d, rec.last()))
		for range 5 { // the pod changes meanwhile; the apply is held
			time.Sleep(2 * time.Millisecond)
			a.Seen(podOf("", d, rec.last()))
		}
		if ready, _ := a.Ready(); ready {
			t.Errorf("generation %d: /readyz ready before its apply", gen)
		}
		if s := parsed(t, rec.last()); s.ObservedGeneration != gen-1 {
			t.Errorf("generation %d: status %+v written before its apply", gen, s)
		}
		close(gate)
		c.set(nil, nil)
		eventually(t, fmt.Sprintf("generation %d's status", gen), func() bool {
			return strings.Contains(rec.last(), fmt.Sprintf(`"observedGeneration":%d`, gen))
		})
	}
	values := rec.all()
	for _, v := range values {
		if s := parsed(t, v); !s.Ready || s.Agent != "node/n1" {
			t.Errorf("status written: %s", v)
		}
	}
	if len(values) != 6 {
		t.Errorf("%d status writes for 6 generations: %q", len(values), values)
	}
}

// TestSidecarRefusesANodeModePod: a sidecar in a pod not marked for it
// applies nothing and says what to do, in /readyz and in the status.
func TestSidecarRefusesANodeModePod(t *testing.T) {
	const todo = "add meridio-experiment/target-agent: sidecar to the pod, or remove the sidecar and let the node daemon apply it"
	for _, mode := range []string{"", kube.TargetAgentNode} {
		c, rec := &fakeConfigurer{}, &statusRecorder{}
		a := startPodAgent(t, SidecarAgent, c, rec)
		a.Seen(podOf(mode, desiredOf(1, "169.111.100.1"), ""))
		eventually(t, "the refusal written", func() bool { return rec.last() != "" })
		s := parsed(t, rec.last())
		if s.Ready || s.Agent != SidecarAgent || len(s.Errors) != 1 || !strings.Contains(s.Errors[0], todo) ||
			strings.Contains(s.Errors[0], "stays") {
			t.Errorf("mode %q: status %+v", mode, s)
		}
		if ready, why := a.Ready(); ready || len(why) != 1 || !strings.Contains(why[0], todo) {
			t.Errorf("mode %q: Ready %v %q", mode, ready, why)
		}
		time.Sleep(20 * time.Millisecond)
		if n := c.count(); n != 0 {
			t.Errorf("mode %q: %d applies", mode, n)
		}
	}
}

// TestSidecarLeavesWhatItAppliedWhenTheModeChanges: a pod marked for the
// sidecar loses the mark while it runs: the sidecar stops applying (no
// resync either), leaves what it applied, says so, and leaves alone the
// status the node daemon writes next.
func TestSidecarLeavesWhatItAppliedWhenTheModeChanges(t *testing.T) {
	c, rec := &fakeConfigurer{}, &statusRecorder{}
	a := startPodAgent(t, SidecarAgent, c, rec, targetnet.WithResync(2*time.Millisecond))
	d := desiredOf(3, "169.111.100.1")
	a.Seen(podOf(kube.TargetAgentSidecar, d, ""))
	eventually(t, "generation 3 applied", func() bool { return readyBy(rec.last(), SidecarAgent) && c.count() > 2 })
	a.Seen(podOf("", d, rec.last()))
	eventually(t, "the refusal written", func() bool { return !readyBy(rec.last(), SidecarAgent) })
	s := parsed(t, rec.last())
	if len(s.Errors) != 1 || !strings.Contains(s.Errors[0], "what this sidecar applied before (generation 3) stays in place") {
		t.Errorf("status %+v", s)
	}
	applies := c.count()
	time.Sleep(50 * time.Millisecond)  // 25 resync periods
	if n := c.count(); n > applies+1 { // one apply may have been running
		t.Errorf("%d applies after the mark went", n-applies)
	}
	writes := len(rec.all())
	a.Seen(podOf("", d, Status{Version: SchemaVersion, ObservedGeneration: 3, Ready: true, Agent: "node/n1"}.Marshal()))
	time.Sleep(20 * time.Millisecond)
	if n := len(rec.all()); n != writes {
		t.Errorf("the sidecar overwrote the node daemon's status: %q", rec.all()[writes:])
	}
	// Marked again: it applies again.
	a.Seen(podOf(kube.TargetAgentSidecar, d, rec.last()))
	eventually(t, "applied again", func() bool { return readyBy(rec.last(), SidecarAgent) })
}

// TestBothAgentsRefuseAnUnknownMode: neither agent applies anything in a
// pod whose mark is neither sidecar nor node; the first to write says why,
// the other leaves it (no writes in turn).
func TestBothAgentsRefuseAnUnknownMode(t *testing.T) {
	cs, recS := &fakeConfigurer{}, &statusRecorder{}
	cn, recN := &fakeConfigurer{}, &statusRecorder{}
	sidecar := startPodAgent(t, SidecarAgent, cs, recS)
	node := startPodAgent(t, NodeAgent("n1"), cn, recN)
	d := desiredOf(1, "169.111.100.1")
	sidecar.Seen(podOf("daemon", d, ""))
	eventually(t, "the sidecar's refusal", func() bool { return recS.last() != "" })
	node.Seen(podOf("daemon", d, recS.last()))
	sidecar.Seen(podOf("daemon", d, recS.last()))
	time.Sleep(20 * time.Millisecond)
	s := parsed(t, recS.last())
	if s.Ready || len(s.Errors) != 1 || !strings.Contains(s.Errors[0], `is "daemon", neither "sidecar" nor "node"`) {
		t.Errorf("status %+v", s)
	}
	if len(recN.all()) != 0 || len(recS.all()) != 1 || cs.count()+cn.count() != 0 {
		t.Errorf("writes: sidecar %q node %q; applies %d %d", recS.all(), recN.all(), cs.count(), cn.count())
	}
	for _, a := range []*PodAgent{sidecar, node} {
		if ready, why := a.Ready(); ready || !strings.Contains(strings.Join(why, ""), "set it to sidecar or node, or remove it") {
			t.Errorf("Ready %v %q", ready, why)
		}
	}
}

// TestNodeAgentStaysOutOfSidecarPodsAndHostNetwork: the node daemon's
// agent applies nothing in a pod marked for the sidecar and writes nothing
// there; in a hostNetwork pod it applies nothing and says so.
func TestNodeAgentStaysOutOfSidecarPodsAndHostNetwork(t *testing.T) {
	c, rec := &fakeConfigurer{}, &statusRecorder{}
	a := startPodAgent(t, NodeAgent("n1"), c, rec)
	a.Seen(podOf(kube.TargetAgentSidecar, desiredOf(1, "169.111.100.1"), ""))
	time.Sleep(20 * time.Millisecond)
	if len(rec.all()) != 0 || c.count() != 0 {
		t.Errorf("sidecar pod: writes %q, %d applies", rec.all(), c.count())
	}
	c, rec = &fakeConfigurer{}, &statusRecorder{}
	a = startPodAgent(t, NodeAgent("n1"), c, rec)
	p := podOf("", desiredOf(1, "169.111.100.1"), "")
	p.Spec.HostNetwork = true
	a.Seen(p)
	eventually(t, "the refusal written", func() bool { return rec.last() != "" })
	if s := parsed(t, rec.last()); s.Ready || len(s.Errors) != 1 || !strings.Contains(s.Errors[0], "hostNetwork") || c.count() != 0 {
		t.Errorf("status %+v, %d applies", s, c.count())
	}
}

// TestPodAgentIsQuietWithoutANamespace: an apply that finds no namespace
// writes no status and counts no apply; a change of the pod tries again at
// once, and the next apply reports as usual.
func TestPodAgentIsQuietWithoutANamespace(t *testing.T) {
	c, rec := &fakeConfigurer{}, &statusRecorder{}
	c.set(fmt.Errorf("cri: %w: no sandbox", ErrNoNamespace), nil)
	m := &countingMetrics{}
	a := NewPodAgent(NodeAgent("n1"), c, rec.write, WithLogger(slog.New(slog.DiscardHandler)), WithMetrics(m),
		WithLoopOptions(targetnet.WithBackoff(time.Hour, time.Hour))) // no retry but the pod's changes
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	d := desiredOf(1, "169.111.100.1")
	a.Seen(podOf("", d, ""))
	eventually(t, "the first apply", func() bool { return c.count() == 1 })
	eventually(t, "Ready says why", func() bool {
		_, why := a.Ready()
		return len(why) == 1 && strings.Contains(why[0], "not available")
	})
	c.set(nil, nil)
	a.Seen(podOf("", d, "")) // e.g. the sandbox re-created: the pod's status changes
	eventually(t, "applied", func() bool { return rec.last() != "" })
	if v := rec.all(); len(v) != 1 || !parsed(t, v[0]).Ready {
		t.Errorf("status writes %q", v)
	}
	if m.applies() != 1 {
		t.Errorf("%d applies counted, want the one that found the namespace", m.applies())
	}
}

// TestOwnerRemovesOnlyItsOwnStatus: with nothing wanted, the pod's agent
// removes the status it wrote, but not a refusal another agent wrote.
func TestOwnerRemovesOnlyItsOwnStatus(t *testing.T) {
	c, rec := &fakeConfigurer{}, &statusRecorder{}
	a := startPodAgent(t, NodeAgent("n1"), c, rec)
	other := Status{Version: SchemaVersion, Agent: SidecarAgent, Errors: []string{"refused"}}.Marshal()
	a.Seen(podOf("", "", other))
	eventually(t, "the removal applied", func() bool { return c.count() > 0 })
	time.Sleep(20 * time.Millisecond)
	if v := rec.all(); len(v) != 0 {
		t.Errorf("writes %q over the sidecar's status", v)
	}
	a.Seen(podOf("", "", Status{Version: SchemaVersion, ObservedGeneration: 2, Ready: true, Agent: "node/n1"}.Marshal()))
	eventually(t, "its own status removed", func() bool { v := rec.all(); return len(v) == 1 && v[0] == "" })
}

type countingMetrics struct {
	mu sync.Mutex
	n  int
}

func (m *countingMetrics) ObserveApply(targetnet.Outcome) { m.mu.Lock(); m.n++; m.mu.Unlock() }
func (m *countingMetrics) ObserveStatusWrite(error)       {}
func (m *countingMetrics) applies() int                   { m.mu.Lock(); defer m.mu.Unlock(); return m.n }
