package targetnode

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sllbrd/sllbrd/internal/cri"
	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

const probeUID = "00000000-0000-0000-0000-000000000000"

// fakeNetNS answers for pods by UID: a path, or cri.ErrNoSandbox for a pod
// it does not know. It records the pods asked for (not the readiness
// probe's) and how many asks ran at once; delay holds each ask.
type fakeNetNS struct {
	mu      sync.Mutex
	paths   map[string]string
	asked   map[string]int
	running int
	most    int
	delay   time.Duration
}

func newFakeNetNS() *fakeNetNS {
	return &fakeNetNS{paths: map[string]string{}, asked: map[string]int{}}
}

func (f *fakeNetNS) PodNetNS(ctx context.Context, uid string) (string, error) {
	f.mu.Lock()
	path, ok := f.paths[uid]
	if uid != probeUID {
		f.asked[uid]++
		f.running++
		f.most = max(f.most, f.running)
	}
	delay := f.delay
	f.mu.Unlock()
	time.Sleep(delay)
	f.mu.Lock()
	if uid != probeUID {
		f.running--
	}
	f.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("cri: pod %s: %w", uid, cri.ErrNoSandbox)
	}
	return path, nil
}

func (f *fakeNetNS) asks(uid string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[uid]
}

func (f *fakeNetNS) setPath(uid, path string) {
	f.mu.Lock()
	f.paths[uid] = path
	f.mu.Unlock()
}

// logRecorder is a slog.Handler keeping every record's level and message.
type logRecorder struct {
	mu      sync.Mutex
	records []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var attrs []string
	r.Attrs(func(a slog.Attr) bool { attrs = append(attrs, a.String()); return true })
	l.mu.Lock()
	l.records = append(l.records, r.Level.String()+" "+r.Message+" "+strings.Join(attrs, " "))
	l.mu.Unlock()
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// above returns the records at warn level or above.
func (l *logRecorder) above() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.records {
		if strings.HasPrefix(r, "WARN") || strings.HasPrefix(r, "ERROR") {
			out = append(out, r)
		}
	}
	return out
}

// testPod is a pod on node with a desired configuration of generation 1;
// mode is its target-agent annotation ("": none).
func testPod(name, node, mode string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
		Annotations: map[string]string{kube.AnnotationTargetNetwork: `{"version":1,"generation":1,"gateways":[]}`}},
		Spec: corev1.PodSpec{NodeName: node}}
	if mode != "" {
		p.Annotations[kube.AnnotationTargetAgent] = mode
	}
	return p
}

// patches records the status values patched, per pod.
type patches struct {
	mu     sync.Mutex
	values map[string][]string
}

func recordPatches(c *fake.Clientset) *patches {
	p := &patches{values: map[string][]string{}}
	c.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		p.mu.Lock()
		p.values[pa.GetName()] = append(p.values[pa.GetName()], string(pa.GetPatch()))
		p.mu.Unlock()
		return false, nil, nil
	})
	return p
}

func (p *patches) of(name string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.values[name])
}

// runDaemon runs a daemon of node n1 until the test ends.
func runDaemon(t *testing.T, c *fake.Clientset, netns NetNS, log *logRecorder, opts ...Option) *Daemon {
	t.Helper()
	d, err := New(c, "n1", netns, append([]Option{WithLogger(slog.New(log))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return d
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("%s: not within 10s", what)
}

// TestDaemonFollowsItsNodesPods: of the pods the API hands over (the fake
// ignores the field selector, as a broken server would), the daemon asks
// the runtime only for the node-mode pod of its node with an annotation;
// a hostNetwork pod gets a status saying it is never configured and no
// runtime call; a pod without a sandbox gets no status and no warning.
func TestDaemonFollowsItsNodesPods(t *testing.T) {
	host := testPod("host", "n1", "")
	host.Spec.HostNetwork = true
	bare := testPod("bare", "n1", "")
	bare.Annotations = nil
	c := fake.NewClientset(testPod("app", "n1", ""), testPod("side", "n1", kube.TargetAgentSidecar),
		testPod("other", "n2", ""), testPod("done", "n1", kube.TargetAgentNode), host, bare)
	done, _ := c.CoreV1().Pods("ns").Get(context.Background(), "done", metav1.GetOptions{})
	done.Status.Phase = corev1.PodSucceeded
	if _, err := c.CoreV1().Pods("ns").UpdateStatus(context.Background(), done, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := recordPatches(c)
	netns, log := newFakeNetNS(), &logRecorder{}
	d := runDaemon(t, c, netns, log)
	eventually(t, "ready", func() bool { ok, _ := d.Ready(); return ok })
	eventually(t, "the node-mode pod asked for", func() bool { return netns.asks("uid-app") > 0 })
	eventually(t, "the hostNetwork pod's status", func() bool { return len(p.of("host")) > 0 })
	time.Sleep(300 * time.Millisecond)
	for _, name := range []string{"side", "other", "done", "host", "bare"} {
		if n := netns.asks("uid-" + name); n != 0 {
			t.Errorf("pod %s: the runtime was asked %d times", name, n)
		}
	}
	for _, name := range []string{"app", "side", "other", "done", "bare"} {
		if v := p.of(name); len(v) != 0 {
			t.Errorf("pod %s: status written %q", name, v)
		}
	}
	got, _ := c.CoreV1().Pods("ns").Get(context.Background(), "host", metav1.GetOptions{})
	s, err := targetpod.ParseStatus(got.Annotations[kube.AnnotationTargetNetworkStatus])
	if err != nil || s.Ready || s.Agent != "node/n1" || len(s.Errors) != 1 || !strings.Contains(s.Errors[0], "hostNetwork") {
		t.Errorf("hostNetwork pod's status %+v %v", s, err)
	}
	if w := log.above(); len(w) != 1 || !strings.Contains(w[0], "hostNetwork") {
		t.Errorf("warnings: %q", w)
	}
}

// TestDaemonWithoutSandboxIsQuiet: a pod whose sandbox is missing is asked
// for with backoff (a few times a second at first, then less), without a
// warning or a status; a deleted pod is no longer asked for.
func TestDaemonWithoutSandboxIsQuiet(t *testing.T) {
	c := fake.NewClientset(testPod("app", "n1", ""))
	p := recordPatches(c)
	netns, log := newFakeNetNS(), &logRecorder{}
	runDaemon(t, c, netns, log)
	eventually(t, "asked", func() bool { return netns.asks("uid-app") > 0 })
	time.Sleep(1500 * time.Millisecond)
	// 100 ms doubling: about 5 asks in 1.5 s, never one per resync tick.
	if n := netns.asks("uid-app"); n < 3 || n > 8 {
		t.Errorf("asked %d times in 1.5 s", n)
	}
	if w := log.above(); len(w) != 0 || len(p.of("app")) != 0 {
		t.Errorf("warnings %q, writes %q", w, p.of("app"))
	}
	if err := c.CoreV1().Pods("ns").Delete(context.Background(), "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	n := netns.asks("uid-app")
	time.Sleep(2 * time.Second)
	if m := netns.asks("uid-app"); m != n {
		t.Errorf("asked %d times after the pod was deleted", m-n)
	}
}

// TestDaemonRefusesFilesThatAreNotAPodsNetworkNamespace: a path naming a
// regular file, another kind of namespace or the daemon's own network
// namespace is refused, and said in the status.
func TestDaemonRefusesFilesThatAreNotAPodsNetworkNamespace(t *testing.T) {
	file := t.TempDir() + "/netns"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		file:                "is not a namespace",
		"/proc/self/ns/uts": "is not a network namespace",
		"/proc/self/ns/net": "the node daemon's own network namespace",
	} {
		c := fake.NewClientset(testPod("app", "n1", ""))
		netns := newFakeNetNS()
		netns.setPath("uid-app", path)
		runDaemon(t, c, netns, &logRecorder{}, WithResync(time.Hour))
		var s targetpod.Status
		eventually(t, path+": the status", func() bool {
			got, _ := c.CoreV1().Pods("ns").Get(context.Background(), "app", metav1.GetOptions{})
			s, _ = targetpod.ParseStatus(got.Annotations[kube.AnnotationTargetNetworkStatus])
			return len(s.Errors) > 0
		})
		if s.Ready || !strings.Contains(strings.Join(s.Errors, ";"), want) {
			t.Errorf("%s: status %+v, want %q", path, s, want)
		}
	}
}

// TestDaemonBoundsItsWork: applies run at most WithLimits' number at once,
// and status writes keep to its rate.
func TestDaemonBoundsItsWork(t *testing.T) {
	var objs []runtime.Object
	for i := range 12 {
		objs = append(objs, testPod(fmt.Sprintf("app-%d", i), "n1", ""))
	}
	for i := range 10 {
		p := testPod(fmt.Sprintf("host-%d", i), "n1", "")
		p.Spec.HostNetwork = true
		objs = append(objs, p)
	}
	c := fake.NewClientset(objs...)
	p := recordPatches(c)
	netns := newFakeNetNS()
	netns.delay = 30 * time.Millisecond
	start := time.Now()
	runDaemon(t, c, netns, &logRecorder{}, WithLimits(3, 2, 20, 2))
	eventually(t, "every pod asked for", func() bool {
		for i := range 12 {
			if netns.asks(fmt.Sprintf("uid-app-%d", i)) == 0 {
				return false
			}
		}
		return true
	})
	eventually(t, "every refusal written", func() bool {
		for i := range 10 {
			if len(p.of(fmt.Sprintf("host-%d", i))) == 0 {
				return false
			}
		}
		return true
	})
	took := time.Since(start)
	netns.mu.Lock()
	most := netns.most
	netns.mu.Unlock()
	if most > 3 || most < 2 {
		t.Errorf("%d applies at once, want 2-3 (the limit 3)", most)
	}
	if min := 350 * time.Millisecond; took < min { // (10 - burst 2) / 20 per second = 0.4 s
		t.Errorf("10 status writes in %v at 20/s after a burst of 2", took)
	}
}

// TestCleanupRemovesTheNodeDaemonsStatuses: in cleanup mode, the node
// daemon's statuses go from node-mode pods whose namespace is gone or
// clean, and from a hostNetwork pod (without asking the runtime); a
// sidecar's pod and another agent's status stay; Ready once done.
func TestCleanupRemovesTheNodeDaemonsStatuses(t *testing.T) {
	mine := targetpod.Status{Version: 1, ObservedGeneration: 1, Ready: true, Agent: "node/n1"}.Marshal()
	side := targetpod.Status{Version: 1, ObservedGeneration: 1, Ready: true, Agent: "sidecar"}.Marshal()
	withStatus := func(p *corev1.Pod, s string) *corev1.Pod {
		p.Annotations[kube.AnnotationTargetNetworkStatus] = s
		return p
	}
	host := testPod("host", "n1", "")
	host.Spec.HostNetwork = true
	c := fake.NewClientset(withStatus(testPod("app", "n1", ""), mine), withStatus(testPod("side", "n1", kube.TargetAgentSidecar), side),
		withStatus(testPod("refused", "n1", ""), side), withStatus(testPod("other", "n2", ""), mine), withStatus(host, mine))
	p := recordPatches(c)
	netns, log := newFakeNetNS(), &logRecorder{}
	d, err := New(c, "n1", netns, WithLogger(slog.New(log)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Cleanup(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Cleanup: %v", err)
		}
	}()
	eventually(t, "clean-up done", func() bool { ok, _ := d.Ready(); return ok })
	for _, name := range []string{"app", "host"} {
		if v := p.of(name); len(v) != 1 || !strings.Contains(v[0], `"meridio-experiment/target-network-status":null`) {
			t.Errorf("%s: patches %q", name, v)
		}
	}
	for _, name := range []string{"side", "refused", "other"} {
		if v := p.of(name); len(v) != 0 {
			t.Errorf("%s: patches %q", name, v)
		}
	}
	if netns.asks("uid-side") != 0 || netns.asks("uid-other") != 0 || netns.asks("uid-host") != 0 || netns.asks("uid-app") != 1 ||
		netns.asks("uid-refused") != 1 {
		t.Errorf("asked: %v", netns.asked)
	}
	if w := log.above(); len(w) != 0 {
		t.Errorf("warnings %q", w)
	}
}
