package targetpod_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

const (
	agentNS = "sllbrd-target"
	appPod  = "app-1"
	example = "../../deploy/examples/target-application.yaml"
	// deadline bounds every wait for an eventual condition, generously:
	// the suite runs on a loaded 2-core machine beside the lab tests.
	deadline = 60 * time.Second
)

// desired is the controller's annotation for generation gen with the
// given IPv4 next hops.
func desired(gen int, hops4 ...string) string {
	h, _ := json.Marshal(hops4)
	return `{"version":1,"generation":` + itoa(gen) + `,"gateways":[{"name":"sllb-a","table":50000,` +
		`"subnets":["169.111.100.0/24","fd00:111::/64"],"vips":["20.0.0.1/32","2001:db8::1/128"],` +
		`"nextHops":{"ipv4":` + string(h) + `,"ipv6":["fd00:111::1"]}}]}`
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

type agentEnv struct {
	t      *testing.T
	ctx    context.Context
	admin  kubernetes.Interface
	sa     kubernetes.Interface
	ns     string // the pod's network namespace
	kernel *targetnet.NetlinkKernel
}

// newAgentEnv starts kube-apiserver with deploy/examples' RBAC of the
// sidecar, creates the application's Pod object, and a network namespace
// standing in for the pod (net1 towards a second namespace).
func newAgentEnv(t *testing.T) *agentEnv {
	require.Root(t)
	require.Programs(t, "ip")
	sa := kubetest.ServiceAccount(agentNS, "target-application")
	cp := kubetest.Start(t, sa)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	e := &agentEnv{t: t, ctx: ctx, admin: kubernetes.NewForConfigOrDie(cp.AdminConfig()), sa: kubernetes.NewForConfigOrDie(cp.Config(sa.Name))}
	if _, err := e.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client, err := kubetest.NewClient(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := client.CreateFiles(ctx, agentNS, example); err != nil { // ServiceAccount, Role, RoleBinding, Deployment
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: appPod, Labels: map[string]string{"app": "example-target-application-multi"},
		Annotations: map[string]string{kube.AnnotationTargetAgent: kube.TargetAgentSidecar}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "application", Image: "example.org/app:1"}}}}
	if _, err := e.admin.CoreV1().Pods(agentNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var fd int
	e.ns, fd = netns.New(t, "sllbrd-agent")
	lbs, _ := netns.New(t, "sllbrd-agent-lb")
	for _, c := range [][]string{{e.ns, "link set lo up"}, {e.ns, "link add net1 type veth peer name peer netns " + lbs},
		{e.ns, "link set net1 up"}, {lbs, "link set peer up"},
		{e.ns, "addr add 169.111.100.11/24 dev net1"}, {e.ns, "addr add fd00:111::11/64 dev net1 nodad"}} {
		netns.Run(t, append([]string{"ip", "-n", c[0]}, strings.Fields(c[1])...)...)
	}
	if e.kernel, err = targetnet.NewNetlinkKernel(fd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.kernel.Close() })
	return e
}

// start runs an agent as the example's ServiceAccount until stopped.
func (e *agentEnv) start() (*targetpod.Agent, func()) {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a := targetpod.NewAgent(e.sa, agentNS, appPod, targetnet.New(e.kernel), targetpod.WithLogger(log))
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.t.Errorf("agent: %v", err)
			}
		})
	}
	e.t.Cleanup(stop)
	return a, stop
}

func (e *agentEnv) annotate(key string, value *string) {
	e.t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
	if _, err := e.admin.CoreV1().Pods(agentNS).Patch(e.ctx, appPod, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// status waits until the status annotation satisfies ok and returns it.
func (e *agentEnv) status(what string, ok func(targetpod.Status, bool) bool) targetpod.Status {
	e.t.Helper()
	var last string
	for end := time.Now().Add(deadline); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		p, err := e.admin.CoreV1().Pods(agentNS).Get(e.ctx, appPod, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		v, present := p.Annotations[kube.AnnotationTargetNetworkStatus]
		s, _ := targetpod.ParseStatus(v)
		if ok(s, present) {
			return s
		}
		last = v
	}
	e.t.Fatalf("status %s: not within %v (last %q)", what, deadline, last)
	return targetpod.Status{}
}

func (e *agentEnv) routes() string {
	out, _ := exec.Command("ip", "-n", e.ns, "route", "show", "table", "50000").CombinedOutput()
	out6, _ := exec.Command("ip", "-n", e.ns, "-6", "route", "show", "table", "50000").CombinedOutput()
	return string(out) + string(out6)
}

// TestIntegrationAgent runs sllbrd target's agent with the example's Role
// (get, watch, patch on pods) against kube-apiserver, in a network
// namespace standing in for the pod.
func TestIntegrationAgent(t *testing.T) {
	e := newAgentEnv(t)
	a, stop := e.start()
	// waitReady waits until the agent's readiness is want, for a reason
	// containing because when not ready.
	waitReady := func(want bool, because string) {
		var why []string
		for end := time.Now().Add(deadline); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			var ok bool
			if ok, why = a.Ready(); ok == want && strings.Contains(strings.Join(why, "; "), because) {
				return
			}
		}
		t.Fatalf("ready %v (%q) not within %v: %v", want, because, deadline, why)
	}
	waitReady(false, "no network configuration yet")

	d1 := desired(1, "169.111.100.1", "169.111.100.2")
	written := time.Now()
	e.annotate(kube.AnnotationTargetNetwork, &d1)
	s := e.status("generation 1 applied", func(s targetpod.Status, _ bool) bool { return s.ObservedGeneration == 1 })
	t.Logf("desired annotation written -> status of generation 1 read back: %v", time.Since(written).Round(time.Millisecond))
	if !s.Ready || len(s.Gateways) != 1 || len(s.Gateways[0].VIPs) != 2 || len(s.Gateways[0].NextHops.IPv4) != 2 ||
		s.Gateways[0].Interfaces["ipv4"] != "net1" {
		t.Errorf("status %+v", s)
	}
	waitReady(true, "")
	if r := e.routes(); !strings.Contains(r, "nexthop via 169.111.100.1 dev net1") || !strings.Contains(r, "default via fd00:111::1 dev net1") {
		t.Errorf("routes:\n%s", r)
	}

	// Generation 2: one next hop fewer.
	d2 := desired(2, "169.111.100.2")
	e.annotate(kube.AnnotationTargetNetwork, &d2)
	e.status("generation 2 applied", func(s targetpod.Status, _ bool) bool {
		return s.ObservedGeneration == 2 && len(s.Gateways[0].NextHops.IPv4) == 1
	})

	// A restarted agent finds everything in place and changes nothing.
	stop()
	before := e.routes()
	a, stop = e.start()
	waitReady(true, "")
	if after := e.routes(); after != before {
		t.Errorf("routes changed across a restart:\n%s\n%s", before, after)
	}

	// An annotation of an unknown version changes nothing in the kernel.
	bad := strings.Replace(desired(3), `"version":1`, `"version":2`, 1)
	e.annotate(kube.AnnotationTargetNetwork, &bad)
	s = e.status("the invalid annotation reported", func(s targetpod.Status, _ bool) bool { return !s.Ready && len(s.Errors) > 0 })
	if !strings.Contains(s.Errors[0], "version 2") || s.ObservedGeneration != 2 {
		t.Errorf("status %+v", s)
	}
	waitReady(false, "is invalid")
	if r := e.routes(); r != before {
		t.Errorf("an invalid annotation changed the routes:\n%s", r)
	}

	// Foreign configuration in the way: reported, not ready.
	netns.Run(t, "ip", "-n", e.ns, "rule", "add", "pref", "100", "from", "20.0.0.1", "lookup", "100")
	e.annotate(kube.AnnotationTargetNetwork, &d2)
	s = e.status("the conflict reported", func(s targetpod.Status, _ bool) bool { return len(s.Conflicts) == 1 && !s.Ready })
	if !strings.Contains(s.Conflicts[0], "pref 100 from 20.0.0.1/32") {
		t.Errorf("conflicts %v", s.Conflicts)
	}
	netns.Run(t, "ip", "-n", e.ns, "rule", "del", "pref", "100")
	// The periodic resync is 30 s: a new generation shows the conflict gone.
	d4 := desired(4, "169.111.100.2")
	e.annotate(kube.AnnotationTargetNetwork, &d4)
	e.status("the conflict gone", func(s targetpod.Status, _ bool) bool { return s.ObservedGeneration == 4 && s.Ready })

	// The annotation removed: everything of ours goes, and the status too.
	e.annotate(kube.AnnotationTargetNetwork, nil)
	e.status("the status removed", func(_ targetpod.Status, present bool) bool { return !present })
	if r := e.routes(); strings.TrimSpace(r) != "" {
		t.Errorf("routes left:\n%s", r)
	}
	// The ServiceAccount can do only what the Role grants: no list.
	if _, err := e.sa.CoreV1().Pods(agentNS).List(e.ctx, metav1.ListOptions{}); err == nil {
		t.Errorf("the sidecar's ServiceAccount may list pods")
	}
}
