package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/sllbrd/sllbrd/deploy"
	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/controller"
)

const (
	deployDir = "../../deploy"
	// waitTimeout bounds every wait for an eventual condition. It is
	// generous: the suite runs on a loaded 2-core machine beside the lab
	// tests, and a failed write is retried after up to 30 s (the work
	// queue's maximum backoff), so recovery can take longer than that.
	waitTimeout = 60 * time.Second
	className   = "meridio-experiment-stateless-load-balancer"
	nadName     = "macvlan-nad-1"
)

// env is a control plane with the CRDs, a namespace and deploy/controller's
// RBAC in it; controllers run as the ServiceAccount it binds, so every test
// also proves the RBAC sufficient.
type env struct {
	t     *testing.T
	ctx   context.Context
	cp    *kubetest.ControlPlane
	kube  kubernetes.Interface // admin
	gw    gatewayclient.Interface
	dyn   *kubetest.Client
	ns    string
	ctlSA *rest.Config
}

func newEnv(t *testing.T, ns string) *env {
	t.Helper()
	require.Integration(t)
	sa := kubetest.ServiceAccount(ns, "sllbrd-controller")
	cp := kubetest.Start(t, sa)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, cp: cp, ns: ns, ctlSA: cp.Config(sa.Name)}
	e.kube = kubernetes.NewForConfigOrDie(cp.AdminConfig())
	e.gw = gatewayclient.NewForConfigOrDie(cp.AdminConfig())
	var err error
	if e.dyn, err = kubetest.NewClient(cp.AdminConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	if err := e.dyn.InstallAllCRDs(ctx, deployDir); err != nil {
		t.Fatalf("install CRDs: %v", err)
	}
	rbac, _ := filepath.Glob(filepath.Join(deployDir, "controller", "*role*.yaml"))
	e.createFiles(append(rbac, filepath.Join(deployDir, "controller", "service_account.yaml"))...)
	return e
}

// createFiles creates every object of the files in the namespace.
func (e *env) createFiles(paths ...string) {
	e.t.Helper()
	if err := e.dyn.CreateFiles(e.ctx, e.ns, paths...); err != nil {
		e.t.Fatal(err)
	}
}

// running is a controller under test.
type running struct {
	ctl     *controller.Controller
	metrics *metrics.Controller
	stop    func() error // cancels Run and returns its error
}

// testElection retries often so hand-overs are quick (a stopped leader
// releases the Lease, so the lease duration does not delay them), and
// gives renewals long enough for a loaded 2-core machine not to lose the
// lead by accident.
func testElection(identity string) controller.LeaderElection {
	return controller.LeaderElection{Enabled: true, LeaseName: controller.DefaultLeaseName, Identity: identity,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 250 * time.Millisecond}
}

// controllerImage is the image of the controllers' pods, which the SLLBR
// pods get (the shipped template names none).
const controllerImage = "registry.example.org/sllbrd:v1.0.0"

// controllerContainer is the controller's container in its pod.
const controllerContainer = "controller"

// createControllerPod creates the Pod object of a controller replica, as
// the kubelet would run deploy/controller's Deployment, with its container
// running image; no error if it exists.
func (e *env) createControllerPod(name, image string) {
	e.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/name": "sllbrd-controller"}},
		Spec: corev1.PodSpec{NodeName: "node-1", ServiceAccountName: "sllbrd-controller",
			Containers: []corev1.Container{{Name: controllerContainer, Image: image, Args: []string{"controller"}}}},
	}
	if _, err := e.kube.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatalf("create the controller's Pod %s: %v", name, err)
	}
}

// startController runs a controller as the ServiceAccount of
// deploy/controller until stopped or the test ends. It runs in its own Pod
// object, sllbrd-controller-<identity>, whose image it gives the SLLBR
// pods, unless opts say otherwise.
func (e *env) startController(identity string, opts ...controller.Option) *running {
	e.t.Helper()
	return e.startControllerWith(e.ctlSA, identity, opts...)
}

// startControllerWith is startController reaching the API server with cfg
// (the ServiceAccount's, changed by the test).
func (e *env) startControllerWith(cfg *rest.Config, identity string, opts ...controller.Option) *running {
	e.t.Helper()
	m := metrics.NewController()
	self := "sllbrd-controller-" + identity
	e.createControllerPod(self, controllerImage)
	opts = append([]controller.Option{controller.WithMetrics(m), controller.WithLeaderElection(testElection(identity)),
		controller.WithTemplate(controller.DefaultTemplateConfigMap, deploy.SLLBRDeploymentTemplate),
		controller.WithImageFromPod(e.ns, self, controllerContainer)}, opts...)
	ctl, err := controller.New(cfg, e.ns, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	var stopped bool
	var result error
	r := &running{ctl: ctl, metrics: m}
	r.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			result = <-done
		}
		return result
	}
	e.t.Cleanup(func() {
		if err := r.stop(); err != nil {
			e.t.Errorf("controller %s: Run: %v", identity, err)
		}
	})
	return r
}

// waitLeading waits until r leads.
func (e *env) waitLeading(r *running) time.Duration {
	e.t.Helper()
	start := time.Now()
	e.waitFor("controller "+r.ctl.Identity()+" leads", func() (bool, string) { return r.ctl.Leading(), "" })
	return time.Since(start)
}

// waitFor polls ok every 20ms until it holds or waitTimeout passes.
func (e *env) waitFor(what string, ok func() (bool, string)) {
	e.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	var last string
	for time.Now().Before(deadline) {
		var done bool
		if done, last = ok(); done {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("%s: not within %v (last: %s)", what, waitTimeout, last)
}

// gatewayObject is the lab's Gateway: networks macvlan-nad-1, subnets
// 169.111.100.0/24 and fd00:111::/64, of the class className.
func gatewayObject(name string) *gatewayv1.Gateway {
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: className,
			Listeners:        []gatewayv1.Listener{{Name: "all", Port: 4000, Protocol: gatewayv1.TCPProtocolType}},
			Infrastructure: &gatewayv1.GatewayInfrastructure{Annotations: map[gatewayv1.AnnotationKey]gatewayv1.AnnotationValue{
				kube.AnnotationMultusNetworks: `[{"name":"vlan-100","interface":"vlan-100"},{"name":"macvlan-nad-1","interface":"net1"}]`,
				kube.AnnotationNetworks:       `[{"name":"macvlan-nad-1","interface":"net1"}]`,
				kube.AnnotationNetworkSubnets: `["169.111.100.0/24","fd00:111::/64"]`,
			}},
		},
	}
}

func (e *env) createClass() {
	e.t.Helper()
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: className},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: kube.ControllerName}}
	if _, err := e.gw.GatewayV1().GatewayClasses().Create(e.ctx, class, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create GatewayClass: %v", err)
	}
}

func (e *env) createGateway(g *gatewayv1.Gateway) *gatewayv1.Gateway {
	e.t.Helper()
	got, err := e.gw.GatewayV1().Gateways(e.ns).Create(e.ctx, g, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create Gateway %s: %v", g.Name, err)
	}
	return got
}

// createService creates a headless Service of gateway selecting app=app
// (plus the dummy key), with max-endpoints when max > 0.
func (e *env) createService(name, gateway, app string, max int) *corev1.Service {
	e.t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kube.LabelServiceProxyName: gateway}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
			Selector: map[string]string{"app": app, kube.LabelDummyServiceSelector: "true"}},
	}
	if max > 0 {
		svc.Annotations = map[string]string{kube.AnnotationMaxEndpoints: fmt.Sprint(max)}
	}
	got, err := e.kube.CoreV1().Services(e.ns).Create(e.ctx, svc, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create Service %s: %v", name, err)
	}
	return got
}

// networkStatus is Multus' annotation: the pod network (default) then
// network with ips.
func networkStatus(network string, ips ...string) string {
	type entry struct {
		Name      string   `json:"name"`
		Interface string   `json:"interface"`
		IPs       []string `json:"ips"`
		Mac       string   `json:"mac"`
		Default   bool     `json:"default,omitempty"`
	}
	b, _ := json.Marshal([]entry{
		{Name: "kindnet", Interface: "eth0", IPs: []string{"10.244.1.7", "fd00:10:244::7"}, Mac: "aa:00:00:00:00:01", Default: true},
		{Name: network, Interface: "net1", IPs: ips, Mac: "aa:00:00:00:00:02"},
	})
	return string(b)
}

// podSpec describes a pod as kubelet and Multus would leave it.
type podSpec struct {
	name, app string
	status    string // network-status annotation; "" for none
	ready     bool
	node      string // spec.nodeName: a pod with a node is deleted gracefully
	// nodeMode leaves the target-agent annotation out: the node daemon's
	// pod, a ready endpoint only once its target-network-status says
	// ready. Otherwise the pod is marked sidecar: its sidecar holds it
	// NotReady until its network is configured, so its Ready condition
	// decides (what these tests mean by ready).
	nodeMode bool
}

// createPod creates the Pod object, then writes its status as kubelet
// would (Running, Ready as asked, a pod IP) and returns it.
func (e *env) createPod(p podSpec) *corev1.Pod {
	e.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: map[string]string{"app": p.app}, Annotations: map[string]string{}},
		Spec:       corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "app", Image: "example.org/app:1"}}},
	}
	if p.status != "" {
		pod.Annotations[kube.AnnotationNetworkStatus] = p.status
	}
	if !p.nodeMode {
		pod.Annotations[kube.AnnotationTargetAgent] = kube.TargetAgentSidecar
	}
	got, err := e.kube.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create Pod %s: %v", p.name, err)
	}
	return e.setPodReady(got, p.ready)
}

// setPodReady writes the pod's status as kubelet would, reading the pod
// again when the controller wrote it meanwhile (its target-network
// annotation).
func (e *env) setPodReady(pod *corev1.Pod, ready bool) *corev1.Pod {
	e.t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	for {
		next := pod.DeepCopy()
		next.Status.Phase = corev1.PodRunning
		next.Status.PodIP = "10.244.1.7"
		next.Status.PodIPs = []corev1.PodIP{{IP: "10.244.1.7"}}
		next.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
		got, err := e.kube.CoreV1().Pods(e.ns).UpdateStatus(e.ctx, next, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			pod = e.getPod(pod.Name)
			continue
		}
		if err != nil {
			e.t.Fatalf("update status of Pod %s: %v", pod.Name, err)
		}
		return got
	}
}

// setNetworkStatus writes the pod's network-status annotation as Multus
// would.
func (e *env) setNetworkStatus(name, status string) {
	e.t.Helper()
	e.setAnnotation(name, kube.AnnotationNetworkStatus, status)
}

// setAnnotation writes (value a string) or removes (value nil) the pod's
// annotation key with a merge patch.
func (e *env) setAnnotation(name, key string, value any) {
	e.t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
	if _, err := e.kube.CoreV1().Pods(e.ns).Patch(e.ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatalf("patch Pod %s: %v", name, err)
	}
}

func (e *env) getPod(name string) *corev1.Pod {
	e.t.Helper()
	p, err := e.kube.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get Pod %s: %v", name, err)
	}
	return p
}

func (e *env) deletePod(name string, grace int64) {
	e.t.Helper()
	if err := e.kube.CoreV1().Pods(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		e.t.Fatalf("delete Pod %s: %v", name, err)
	}
}

// endpoint is one pod's entry across a Service's slices; the conditions
// are those of its last slice read, mixed is set when its slices disagree
// (one written, the other not yet).
type endpoint struct {
	id                          int
	v4, v6                      string
	ready, serving, terminating bool
	mixed                       bool
}

func (ep endpoint) String() string {
	return fmt.Sprintf("{id %d %s %s r%v s%v t%v mixed %v}", ep.id, ep.v4, ep.v6, ep.ready, ep.serving, ep.terminating, ep.mixed)
}

// slices returns the controller's slices of a Service.
func (e *env) slices(service string) []discoveryv1.EndpointSlice {
	e.t.Helper()
	sel := labels.SelectorFromSet(labels.Set{kube.LabelServiceName: service, kube.LabelEndpointSliceManagedBy: kube.EndpointSliceManager})
	list, err := e.kube.DiscoveryV1().EndpointSlices(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		e.t.Fatalf("list EndpointSlices: %v", err)
	}
	return list.Items
}

// endpoints reads a Service's slices as pod name -> endpoint, failing when
// a pod has different identifiers in two families or slices disagree with
// their annotation.
func (e *env) endpoints(service string) map[string]endpoint {
	e.t.Helper()
	out := map[string]endpoint{}
	for _, s := range e.slices(service) {
		var ids map[string]int
		if err := json.Unmarshal([]byte(s.Annotations[kube.AnnotationEndpointIdentifiers]), &ids); err != nil {
			e.t.Fatalf("slice %s: identifiers annotation: %v", s.Name, err)
		}
		if len(ids) != len(s.Endpoints) {
			e.t.Fatalf("slice %s: %d identifiers for %d endpoints", s.Name, len(ids), len(s.Endpoints))
		}
		for _, ep := range s.Endpoints {
			name, addr := ep.TargetRef.Name, ep.Addresses[0]
			cur, seen := out[name]
			id, ok := ids[addr]
			if !ok || (seen && cur.id != id) {
				e.t.Fatalf("slice %s: pod %s address %s has identifier %d (%v), elsewhere %d", s.Name, name, addr, id, ok, cur.id)
			}
			cur.id = id
			r, sv, tm := *ep.Conditions.Ready, *ep.Conditions.Serving, *ep.Conditions.Terminating
			if seen && (r != cur.ready || sv != cur.serving || tm != cur.terminating) {
				cur.mixed = true
			}
			cur.ready, cur.serving, cur.terminating = r, sv, tm
			if s.AddressType == discoveryv1.AddressTypeIPv4 {
				cur.v4 = addr
			} else {
				cur.v6 = addr
			}
			out[name] = cur
		}
	}
	return out
}

// ids returns pod name -> identifier.
func ids(eps map[string]endpoint) map[string]int {
	out := map[string]int{}
	for n, ep := range eps {
		out[n] = ep.id
	}
	return out
}

func describe(eps map[string]endpoint) string {
	var parts []string
	for n, ep := range eps {
		parts = append(parts, n+"="+ep.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// waitEndpoints waits until the Service's endpoints satisfy ok and every
// pod's slices agree.
func (e *env) waitEndpoints(service, what string, ok func(map[string]endpoint) bool) map[string]endpoint {
	e.t.Helper()
	var eps map[string]endpoint
	e.waitFor(what, func() (bool, string) {
		eps = e.endpoints(service)
		for _, ep := range eps {
			if ep.mixed {
				return false, describe(eps)
			}
		}
		return ok(eps), describe(eps)
	})
	return eps
}

// events returns the notes of the Warning Events with reason about the
// object name of kind.
func (e *env) events(kind, name, reason string) []string {
	e.t.Helper()
	list, err := e.kube.EventsV1().Events(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatalf("list Events: %v", err)
	}
	var out []string
	for _, ev := range list.Items {
		if ev.Regarding.Kind == kind && ev.Regarding.Name == name && ev.Reason == reason && ev.Type == corev1.EventTypeWarning {
			out = append(out, ev.Note)
		}
	}
	return out
}

// waitEvent waits for a Warning Event whose note contains part and returns
// the note.
func (e *env) waitEvent(kind, name, reason, part string) string {
	e.t.Helper()
	var found string
	e.waitFor(fmt.Sprintf("Event %s on %s %s saying %q", reason, kind, name, part), func() (bool, string) {
		notes := e.events(kind, name, reason)
		for _, n := range notes {
			if strings.Contains(n, part) {
				found = n
				return true, ""
			}
		}
		return false, strings.Join(notes, " | ")
	})
	return found
}

func sameKeys[V any](m map[string]V, keys ...string) bool {
	got := make([]string, 0, len(m))
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(keys)
	return slices.Equal(got, keys)
}
