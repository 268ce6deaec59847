package targetnode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sllbrd/sllbrd/internal/cri"
	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetnode"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

const (
	testNS = "sllbrd-node"
	// deadline bounds every wait for an eventual condition, generously:
	// the suite runs on a loaded 2-core machine beside the lab tests.
	deadline = 60 * time.Second
)

// desired is the controller's annotation of generation gen: Gateway
// sllb-a, table 50000, a VIP of each family, the given next hops.
func desired(gen int64, hops ...string) string {
	g := targetpod.Gateway{Name: "sllb-a", Table: 50000,
		Subnets: []netip.Prefix{netip.MustParsePrefix("169.111.100.0/24"), netip.MustParsePrefix("fd00:111::/64")},
		VIPs:    []netip.Prefix{netip.MustParsePrefix("20.0.0.1/32"), netip.MustParsePrefix("2001:db8::1/128")}}
	for _, h := range hops {
		a := netip.MustParseAddr(h)
		if a.Is4() {
			g.NextHops.IPv4 = append(g.NextHops.IPv4, a)
		} else {
			g.NextHops.IPv6 = append(g.NextHops.IPv6, a)
		}
	}
	return targetpod.Desired{Version: targetpod.SchemaVersion, Generation: gen, Gateways: []targetpod.Gateway{g}}.Marshal()
}

// resolver stands in for the container runtime: pod UID -> the path of a
// network namespace the test made (/run/netns/NAME), cri.ErrNoSandbox when
// the pod has none or its file is gone. It counts the asks per pod.
type resolver struct {
	mu    sync.Mutex
	names map[string]string
	asked map[string]int
}

func (r *resolver) PodNetNS(_ context.Context, uid string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked[uid]++
	name, ok := r.names[uid]
	path := filepath.Join(netns.Dir, name)
	if _, err := os.Stat(path); !ok || err != nil {
		return "", fmt.Errorf("pod %s: %w", uid, cri.ErrNoSandbox)
	}
	return path, nil
}

func (r *resolver) asks(uid types.UID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked[string(uid)]
}

type env struct {
	t        *testing.T
	ctx      context.Context
	admin    kubernetes.Interface
	daemon   *rest.Config // the daemon's user: list, watch and patch on pods
	resolver *resolver
	seq      int
}

// newEnv starts kube-apiserver with a user for the daemon that may list,
// watch and patch pods and nothing else, and a namespace for the pods.
func newEnv(t *testing.T) *env {
	require.Root(t)
	require.Programs(t, "ip")
	user := kubetest.ServiceAccount(testNS, "sllbrd-target-node")
	cp := kubetest.Start(t, user)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, admin: kubernetes.NewForConfigOrDie(cp.AdminConfig()), daemon: cp.Config(user.Name),
		resolver: &resolver{names: map[string]string{}, asked: map[string]int{}}}
	if _, err := e.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "sllbrd-target-node-test"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch", "patch"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sllbrd-target-node-test"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: testNS, Name: "sllbrd-target-node"}}}
	if _, err := e.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// podNetNS makes a network namespace standing in for a pod's sandbox:
// lo up, net1 on the Gateway's network (169.111.100.11/24,
// fd00:111::11/64) towards a peer namespace lb, where its other end is
// peer. It is created with ip(8) and not held open, so that the test sees
// whether anything else keeps it alive. Both are deleted when the test
// ends.
func (e *env) podNetNS(name, lb, peer string) {
	e.t.Helper()
	netns.Run(e.t, "ip", "netns", "add", name)
	e.t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	// No link-local address on net1: the kernel adds it a moment after
	// the link is up, which a test watching for changes would see.
	for _, c := range []string{"link set lo up", "link add net1 type veth peer name " + peer + " netns " + lb,
		"link set net1 addrgenmode none", "link set net1 up", "addr add 169.111.100.11/24 dev net1", "addr add fd00:111::11/64 dev net1 nodad"} {
		netns.Run(e.t, append([]string{"ip", "-n", name}, strings.Fields(c)...)...)
	}
	netns.Run(e.t, "ip", "-n", lb, "link", "set", peer, "up")
}

// newPod creates a pod on node whose namespace is a new network namespace
// (made first, and known to the resolver by the pod's UID), with the
// given annotations; it returns the pod and the namespace's name.
func (e *env) newPod(name, node string, hostNetwork bool, annotations map[string]string) (*corev1.Pod, string) {
	e.t.Helper()
	e.seq++
	ns := fmt.Sprintf("sllbrd-tnode-%d-%d", os.Getpid(), e.seq)
	lb := ns + "-lb"
	netns.Run(e.t, "ip", "netns", "add", lb)
	e.t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", lb).Run() })
	e.podNetNS(ns, lb, "peer")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{NodeName: node, HostNetwork: hostNetwork, Containers: []corev1.Container{{Name: "app", Image: "example.org/app:1"}}}}
	pod, err := e.admin.CoreV1().Pods(testNS).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.resolver.mu.Lock()
	e.resolver.names[string(pod.UID)] = ns
	e.resolver.mu.Unlock()
	return pod, ns
}

func (e *env) annotate(pod, key string, value *string) {
	e.t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
	if _, err := e.admin.CoreV1().Pods(testNS).Patch(e.ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// statusOf returns pod's status annotation and whether it is there.
func (e *env) statusOf(pod string) (string, bool) {
	e.t.Helper()
	p, err := e.admin.CoreV1().Pods(testNS).Get(e.ctx, pod, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	v, ok := p.Annotations[kube.AnnotationTargetNetworkStatus]
	return v, ok
}

// status waits until pod's status annotation satisfies ok and returns it.
func (e *env) status(pod, what string, ok func(targetpod.Status, bool) bool) targetpod.Status {
	e.t.Helper()
	var last string
	for end := time.Now().Add(deadline); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		v, present := e.statusOf(pod)
		s, _ := targetpod.ParseStatus(v)
		if ok(s, present) {
			return s
		}
		last = v
	}
	e.t.Fatalf("pod %s: status %s: not within %v (last %q)", pod, what, deadline, last)
	return targetpod.Status{}
}

// watchStatuses records every value of pod's status annotation seen on a
// watch until the returned stop.
func (e *env) watchStatuses(pod string) (stop func() []string) {
	e.t.Helper()
	w, err := e.admin.CoreV1().Pods(testNS).Watch(e.ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", pod).String()})
	if err != nil {
		e.t.Fatal(err)
	}
	var values []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := "\x00"
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Deleted {
				if v := p.Annotations[kube.AnnotationTargetNetworkStatus]; v != last {
					values, last = append(values, v), v
				}
			}
		}
	}()
	return func() []string { w.Stop(); <-done; return values }
}

// patchCounter counts the PATCH requests a client sends.
type patchCounter struct{ n atomic.Int64 }

func (c *patchCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPatch {
			c.n.Add(1)
		}
		return rt.RoundTrip(r)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// warnings is a slog.Handler that prints every record and keeps those at
// warn level and above, with their attributes.
type warnings struct {
	slog.Handler
	attrs []slog.Attr
	mu    *sync.Mutex
	kept  *[]string
}

func newWarnings() warnings {
	return warnings{Handler: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}), mu: &sync.Mutex{}, kept: new([]string)}
}

func (w warnings) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		var b bytes.Buffer
		_ = slog.NewTextHandler(&b, nil).WithAttrs(w.attrs).Handle(ctx, r)
		w.mu.Lock()
		*w.kept = append(*w.kept, b.String())
		w.mu.Unlock()
	}
	return w.Handler.Handle(ctx, r)
}

func (w warnings) WithAttrs(a []slog.Attr) slog.Handler {
	return warnings{Handler: w.Handler.WithAttrs(a), attrs: append(slices.Clone(w.attrs), a...), mu: w.mu, kept: w.kept}
}

func (w warnings) about(s string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, k := range *w.kept {
		if strings.Contains(k, s) {
			out = append(out, k)
		}
	}
	return out
}

// recordingMetrics counts the applies that succeeded.
type recordingMetrics struct{ ok atomic.Int64 }

func (m *recordingMetrics) ObserveApply(o targetnet.Outcome) {
	if o.Err == nil {
		m.ok.Add(1)
	}
}
func (m *recordingMetrics) ObserveStatusWrite(error) {}

// daemon is one running daemon instance.
type daemon struct {
	d       *targetnode.Daemon
	patches *patchCounter
	metrics *recordingMetrics
	log     warnings
	stop    func()
}

// start runs a daemon of node node-a as the daemon's user until stopped;
// cleanup runs its Cleanup instead of Run.
func (e *env) start(cleanup bool) *daemon {
	e.t.Helper()
	cfg := rest.CopyConfig(e.daemon)
	x := &daemon{patches: &patchCounter{}, metrics: &recordingMetrics{}, log: newWarnings()}
	cfg.Wrap(x.patches.wrap)
	d, err := targetnode.New(kubernetes.NewForConfigOrDie(cfg), "node-a", e.resolver, targetnode.WithLogger(slog.New(x.log)),
		targetnode.WithMetrics(x.metrics), targetnode.WithResync(time.Second))
	if err != nil {
		e.t.Fatal(err)
	}
	x.d = d
	run := d.Run
	if cleanup {
		run = d.Cleanup
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	x.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.t.Errorf("daemon: %v", err)
			}
		})
	}
	e.t.Cleanup(x.stop)
	return x
}

// ip runs ip(8) in namespace ns and returns its output ("" on error: the
// namespace may be gone).
func ip(ns string, args ...string) string {
	out, _ := exec.Command("ip", append([]string{"-n", ns}, args...)...).Output()
	return string(out)
}

// kernel is what sllbrd may hold in namespace ns: lo's addresses, the
// rules of both families and the routes of table 50000.
func kernel(ns string) string {
	return ip(ns, "addr", "show", "dev", "lo") + ip(ns, "-4", "rule") + ip(ns, "-6", "rule") +
		ip(ns, "-4", "route", "show", "table", "50000") + ip(ns, "-6", "route", "show", "table", "50000")
}

// nothingOurs reports what of sllbrd's is in namespace ns ("": nothing).
func nothingOurs(ns string) string {
	var found []string
	for _, l := range strings.Split(kernel(ns), "\n") {
		if strings.Contains(l, "20.0.0.1") || strings.Contains(l, "2001:db8::1") || strings.Contains(l, "table 50000") ||
			strings.HasPrefix(l, "default") || strings.HasPrefix(l, "blackhole") {
			found = append(found, strings.TrimSpace(l))
		}
	}
	return strings.Join(found, "; ")
}

// monitor records the address, rule and route changes in namespace ns
// until the returned stop.
func monitor(t *testing.T, ns string) (stop func() string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command("ip", "-n", ns, "monitor", "address", "rule", "route")
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() string {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		return out.String()
	}
	t.Cleanup(func() { stop() })
	time.Sleep(300 * time.Millisecond) // subscribed
	return stop
}
