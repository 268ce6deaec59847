package targetnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sllbrd/sllbrd/internal/cri"
	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

type lastOutcome struct{ o targetnet.Outcome }

func (l *lastOutcome) ObserveApply(o targetnet.Outcome) { l.o = o }
func (l *lastOutcome) ObserveStatusWrite(error)         {}

// TestNodeMetricsSumThePods: each apply is observed with its own error and
// duration and with the last results of every pod summed per Gateway; a
// forgotten pod leaves the sum at the next apply.
func TestNodeMetricsSumThePods(t *testing.T) {
	inner := &lastOutcome{}
	m := newNodeMetrics(inner)
	gw := func(name string, vips int, hops ...string) targetnet.GatewayResult {
		g := targetnet.GatewayResult{Name: name}
		for i := range vips {
			g.VIPs = append(g.VIPs, netip.PrefixFrom(netip.AddrFrom4([4]byte{20, 0, 0, byte(i + 1)}), 32))
		}
		for _, h := range hops {
			g.NextHops = append(g.NextHops, netip.MustParseAddr(h))
		}
		return g
	}
	m.forPod("a").ObserveApply(targetnet.Outcome{Generation: 7, Took: time.Millisecond,
		Result: targetnet.Result{Gateways: []targetnet.GatewayResult{gw("sllb-a", 2, "169.111.100.1")}, Conflicts: []string{"x"}}})
	boom := errors.New("boom")
	m.forPod("b").ObserveApply(targetnet.Outcome{Generation: 3, Err: boom, Took: 2 * time.Millisecond,
		Result: targetnet.Result{Gateways: []targetnet.GatewayResult{gw("sllb-a", 1, "169.111.100.1", "fd00:111::1"), gw("sllb-b", 1)}}})
	o := inner.o
	if o.Err != boom || o.Took != 2*time.Millisecond || o.Generation != 0 || len(o.Result.Gateways) != 2 ||
		o.Result.Gateways[0].Name != "sllb-a" || len(o.Result.Gateways[0].VIPs) != 3 || len(o.Result.Gateways[0].NextHops) != 3 ||
		o.Result.Gateways[1].Name != "sllb-b" || len(o.Result.Conflicts) != 1 {
		t.Errorf("observed %+v", o)
	}
	m.forget("b")
	m.forPod("a").ObserveApply(targetnet.Outcome{Generation: 8,
		Result: targetnet.Result{Gateways: []targetnet.GatewayResult{gw("sllb-a", 2, "169.111.100.1")}}})
	if o := inner.o; o.Err != nil || len(o.Result.Gateways) != 1 || len(o.Result.Gateways[0].VIPs) != 2 || len(o.Result.Conflicts) != 0 {
		t.Errorf("after b went: %+v", o)
	}
}

// scriptedNetNS answers as next, but cri.ErrHostNetwork for pod host, and
// down (when set) to every ask, the readiness probe's included.
type scriptedNetNS struct {
	next *fakeNetNS
	host string
	mu   sync.Mutex
	down error
}

func (s *scriptedNetNS) PodNetNS(ctx context.Context, uid string) (string, error) {
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	switch {
	case down != nil:
		return "", down
	case uid == s.host:
		return "", fmt.Errorf("cri: pod %s: %w", uid, cri.ErrHostNetwork)
	}
	return s.next.PodNetNS(ctx, uid)
}

func (s *scriptedNetNS) setDown(err error) {
	s.mu.Lock()
	s.down = err
	s.mu.Unlock()
}

func states(applied, notReady, noSandbox, refused int) map[string]int {
	return map[string]int{PodApplied: applied, PodNotReady: notReady, PodNoSandbox: noSandbox, PodRefused: refused}
}

// eventuallyStates waits until the daemon's pods are in want.
func eventuallyStates(t *testing.T, d *Daemon, want map[string]int) {
	t.Helper()
	var got map[string]int
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if got = d.PodStates(); maps.Equal(got, want) {
			return
		}
	}
	t.Fatalf("pod states %v, want %v", got, want)
}

// TestDaemonPodStates: each pod the daemon follows is in exactly one
// state: no sandbox, refused (hostNetwork by its spec or by the runtime's
// answer, an unknown mark), not ready (applying fails); pods of another
// node or marked for the sidecar in none. Applies skipped without a
// sandbox are counted, and stop being counted once it is there. A pod
// marked for the sidecar or deleted leaves every state.
func TestDaemonPodStates(t *testing.T) {
	file := t.TempDir() + "/netns"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	host := testPod("host", "n1", "")
	host.Spec.HostNetwork = true
	c := fake.NewClientset(testPod("gone", "n1", ""), host, testPod("odd", "n1", "bogus"), testPod("rt", "n1", ""),
		testPod("file", "n1", ""), testPod("side", "n1", kube.TargetAgentSidecar), testPod("other", "n2", ""))
	next := newFakeNetNS()
	next.setPath("uid-file", file)
	d := runDaemon(t, c, &scriptedNetNS{next: next, host: "uid-rt"}, &logRecorder{})
	eventually(t, "ready", func() bool { ok, _ := d.Ready(); return ok })
	if !d.RuntimeUp() {
		t.Error("runtime not up, yet the daemon is ready")
	}
	eventuallyStates(t, d, states(0, 1, 1, 3))
	eventually(t, "applies without a sandbox counted", func() bool { return d.NamespaceUnavailable() >= 2 })

	// The sandbox is there (a file that is no namespace): not ready, and no
	// more skips. A change of the pod makes its agent try at once.
	next.setPath("uid-gone", file)
	update := func(name string, change func(*corev1.Pod)) {
		t.Helper()
		p, err := c.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(p)
		if _, err := c.CoreV1().Pods("ns").Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update("gone", func(p *corev1.Pod) { p.Labels = map[string]string{"touched": "1"} })
	eventuallyStates(t, d, states(0, 2, 0, 3))
	skipped := d.NamespaceUnavailable()
	time.Sleep(500 * time.Millisecond)
	if n := d.NamespaceUnavailable() - skipped; n != 0 {
		t.Errorf("%d skips counted once the sandbox was there", n)
	}

	// Marked for the sidecar, deleted: in no state.
	update("file", func(p *corev1.Pod) { p.Annotations[kube.AnnotationTargetAgent] = kube.TargetAgentSidecar })
	if err := c.CoreV1().Pods("ns").Delete(context.Background(), "host", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventuallyStates(t, d, states(0, 1, 0, 2))
	for _, name := range []string{"gone", "odd", "rt"} {
		if err := c.CoreV1().Pods("ns").Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventuallyStates(t, d, states(0, 0, 0, 0))
}

// fakeConfigurer answers every apply with res and err.
type fakeConfigurer struct {
	mu  sync.Mutex
	res targetnet.Result
	err error
}

func (f *fakeConfigurer) Apply(targetnet.Desired) (targetnet.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.res, f.err
}

func (f *fakeConfigurer) set(res targetnet.Result, err error) {
	f.mu.Lock()
	f.res, f.err = res, err
	f.mu.Unlock()
}

// TestWorkerStateFollowsTheAgent: a followed pod is applied exactly when
// its agent is ready (its desired generation applied without error or
// conflict); what the namespace search found and the pod's refusal come
// first.
func TestWorkerStateFollowsTheAgent(t *testing.T) {
	conf := &fakeConfigurer{}
	agent := targetpod.NewPodAgent(targetpod.NodeAgent("n1"), conf, func(context.Context, string) error { return nil },
		targetpod.WithLogger(slog.New(&logRecorder{})))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	w := &worker{agent: agent, ns: &podNamespace{}}
	state := func() string {
		var s string
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if s = w.state(); s != PodNotReady {
				break
			}
		}
		return s
	}
	pod := testPod("app", "n1", "")
	generation := func(gen int) {
		pod = pod.DeepCopy()
		pod.Annotations[kube.AnnotationTargetNetwork] = fmt.Sprintf(`{"version":1,"generation":%d,"gateways":[]}`, gen)
		agent.Seen(pod)
	}
	if s := w.state(); s != PodNotReady {
		t.Errorf("before the pod is seen: %s", s)
	}
	generation(1)
	if s := state(); s != PodApplied {
		t.Errorf("generation 1 applied: %s", s)
	}
	// Not ready, for the agent's reason: the state agrees.
	notReady := func(gen int, res targetnet.Result, err error, why string) {
		t.Helper()
		conf.set(res, err)
		generation(gen)
		eventually(t, why, func() bool {
			_, reasons := agent.Ready()
			return strings.Contains(strings.Join(reasons, ";"), why)
		})
		if s := w.state(); s != PodNotReady {
			t.Errorf("%s: %s", why, s)
		}
	}
	notReady(2, targetnet.Result{}, errors.New("boom"), "applying the network configuration failed: boom")
	notReady(3, targetnet.Result{Conflicts: []string{"foreign address"}}, nil, "conflicts with foreign network configuration")
	conf.set(targetnet.Result{}, nil)
	generation(4)
	if s := state(); s != PodApplied {
		t.Errorf("generation 4 applied: %s", s)
	}
	for _, c := range []struct {
		found   int32
		refused bool
		want    string
	}{{nsNone, false, PodNoSandbox}, {nsNodes, false, PodRefused}, {nsNone, true, PodRefused}, {nsOpened, true, PodRefused},
		{nsOpened, false, PodApplied}} {
		w.ns.found.Store(c.found)
		w.refused = c.refused
		if s := w.state(); s != c.want {
			t.Errorf("found %d, refused %v: %s, want %s", c.found, c.refused, s, c.want)
		}
	}
}

// TestDaemonRuntimeUp: RuntimeUp follows the runtime probe's last answer.
func TestDaemonRuntimeUp(t *testing.T) {
	netns := &scriptedNetNS{next: newFakeNetNS()}
	netns.setDown(errors.New("connection refused"))
	d := runDaemon(t, fake.NewClientset(), netns, &logRecorder{}, func(d *Daemon) {
		if d.RuntimeUp() {
			t.Error("up before the first probe")
		}
		d.probe = 10 * time.Millisecond
	})
	eventually(t, "probed", func() bool { _, why := d.Ready(); return strings.Contains(strings.Join(why, ";"), "does not answer") })
	if d.RuntimeUp() {
		t.Error("up while the runtime does not answer")
	}
	netns.setDown(nil)
	eventually(t, "up once the runtime answers", d.RuntimeUp)
	netns.setDown(errors.New("connection refused"))
	eventually(t, "down again", func() bool { return !d.RuntimeUp() })
}
