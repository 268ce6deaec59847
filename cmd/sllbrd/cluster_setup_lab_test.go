package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/kube"
)

// The whole system in the lab (TestIntegrationCluster): netns stand in for
// pods, Pod objects carry their lab addresses, and this file plays the
// parts of the cluster that are not sllbrd's: kubelet (Pod status, the
// sidecar's readiness probe) and Multus (network-status).

const (
	clusterNS = "sllbrd-cluster"
	// appLabel is what the seed's service-a selects.
	appLabel    = "example-target-application-multi"
	sidecarAddr = "127.0.0.1:9180"
	// The seed's L34Routes: TCP 4000 and 4001. 4000 serves short flows,
	// 4001 long-lived echo connections.
	flowPort = 4000
	echoPort = 4001
)

// The VIP added and removed at run time (the lab's other two VIPs).
var (
	vip4b = netip.MustParseAddr("20.0.0.2")
	vip6b = netip.MustParseAddr("2001:db8::2")
)

// cluster is the lab with a control plane and sllbrd's three roles.
type cluster struct {
	t        *testing.T
	ctx      context.Context
	lab      *lab.Lab
	cp       *kubetest.ControlPlane
	kube     kubernetes.Interface // admin
	dyn      *kubetest.Client
	bird     *lab.BIRD
	birdCfg  lab.BIRDConfig
	lbArgs   []string // more flags of the SLLBRs' sllbrd
	ctl      *controllerProc
	lbs      map[int]*e2e.Instance
	sidecars map[int]*lab.Process
	// sidecarBin and sidecarLimit: the sidecars run from their own copy of
	// the binary, each in a memory cgroup with the example's limit.
	sidecarBin   string
	sidecarLimit uint64
	sidecarArgs  []string // more flags of the sidecars' sllbrd target
	dataplane    string   // kubeconfig of the SLLBR pods' ServiceAccount
	target       string   // kubeconfig of the application's ServiceAccount
	latencies    []latency
	// base holds the flows of the first phase, compared by later ones.
	base map[netip.Addr]map[lab.Flow]string
}

type latency struct {
	what  string
	steps []string // "step: duration" from the API write
}

// mgmtSubnet returns a /24 of 198.19.0.0/16 derived from the run id (other
// lab tests use 198.18.0.0/16 for their host links).
func mgmtSubnet(l *lab.Lab) (string, netip.Prefix) {
	h := fnv.New32a()
	h.Write([]byte(l.RunID()))
	n := byte(h.Sum32())
	return fmt.Sprintf("sllbrd-mg-%02x", n), netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 19, n, 0}), 24)
}

// newCluster builds the lab (three LB namespaces, four targets without any
// VIP or route), a management network from the test to every LB and
// target, kube-apiserver on it, the objects (sllbrd's deploy/ and the
// seed's examples), BIRD, the controller, and sllbrd in lb1 and lb2.
func newCluster(t *testing.T) *cluster { return newClusterWith(t, clusterOptions{}) }

// clusterOptions change newCluster's lab.
type clusterOptions struct {
	udpPorts []uint16      // the responders' UDP ports (default none)
	timeout  time.Duration // the cluster's context (default 10 minutes)
}

// newClusterWith is newCluster with o.
func newClusterWith(t *testing.T, o clusterOptions) *cluster {
	if o.udpPorts == nil {
		o.udpPorts = []uint16{}
	}
	if o.timeout == 0 {
		o.timeout = 10 * time.Minute
	}
	l := labWith(t, lab.Options{LBs: 3, Targets: 4, TargetsWithoutVIPs: true,
		TCPPorts: []uint16{flowPort}, UDPPorts: o.udpPorts, EchoPorts: []uint16{echoPort}, Logger: t})
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	t.Cleanup(cancel)
	c := &cluster{t: t, ctx: ctx, lab: l, lbs: map[int]*e2e.Instance{}, sidecars: map[int]*lab.Process{},
		base: map[netip.Addr]map[lab.Flow]string{}}
	link, subnet := mgmtSubnet(l)
	nodes := append(l.LBs(), l.Targets()...)
	host, _, err := l.ConnectManagement(ctx, link, subnet, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := lab.DisconnectHost(context.Background(), link); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	dataplaneSA := kubetest.ServiceAccount(clusterNS, "sllbrd")
	controllerSA := kubetest.ServiceAccount(clusterNS, "sllbrd-controller")
	targetSA := kubetest.ServiceAccount(clusterNS, "target-application")
	c.cp = kubetest.StartAt(t, host, dataplaneSA, controllerSA, targetSA)
	c.kube = kubernetes.NewForConfigOrDie(c.cp.AdminConfig())
	c.dataplane, c.target = c.cp.Kubeconfig(dataplaneSA.Name), c.cp.Kubeconfig(targetSA.Name)
	c.dyn = installController(ctx, t, c.cp, c.kube, clusterNS)
	c.applySeed()
	cfg := l.DefaultBIRDConfig() // all three LBs as neighbours
	cfg.BFD = seedBFD()
	c.bird, c.birdCfg = startBIRD(t, l, cfg), cfg
	for _, lb := range l.LBs() {
		if err := l.InstallVIPCounters(ctx, lb, l.VIPs()); err != nil {
			t.Fatal(err)
		}
	}
	c.ctl = startControllerProc(t, c.cp.Kubeconfig(controllerSA.Name), clusterNS)
	c.sidecarBin, c.sidecarLimit = sidecarBinary(t, l), sidecarMemoryLimit(t)
	if raceEnabled { // the race detector's shadow memory: 5-10x (Go's race detector documentation)
		c.sidecarLimit *= 10
	}
	return c
}

// applySeed creates deploy/rbac (the SLLBR pods'), the sidecar's RBAC and
// Deployment of deploy/examples/target-application.yaml, and the seed's
// objects: GatewayClass, Gateway, its parameters, service-a, the
// L34Routes of 20.0.0.1 and 2001:db8::1, and the GatewayRouters (BGP and
// BFD to the lab's BIRD).
func (c *cluster) applySeed() {
	files, _ := filepath.Glob(filepath.Join(deployDir, "rbac", "*.yaml"))
	for _, f := range []string{"target-application", "gatewayclass", "sllbrconfig", "gateway", "service", "l34route", "gatewayrouter"} {
		files = append(files, filepath.Join(deployDir, "examples", f+".yaml"))
	}
	if err := c.dyn.CreateFiles(c.ctx, clusterNS, files...); err != nil {
		c.t.Fatal(err)
	}
}

// networkStatus is Multus' annotation of a pod with addresses on the
// Gateway's networks: vlan-100 (SLLBR pods only) and macvlan-nad-1.
func networkStatus(i int, vlan *lab.Addrs, net1 lab.Addrs) string {
	type entry struct {
		Name      string   `json:"name"`
		Interface string   `json:"interface"`
		IPs       []string `json:"ips"`
		Default   bool     `json:"default,omitempty"`
	}
	es := []entry{{Name: "kindnet", Interface: "eth0", IPs: []string{fmt.Sprintf("10.244.0.%d", i)}, Default: true}}
	if vlan != nil {
		es = append(es, entry{Name: clusterNS + "/vlan-100", Interface: lab.GatewayLink, IPs: []string{vlan.V4.Addr().String(), vlan.V6.Addr().String()}})
	}
	es = append(es, entry{Name: clusterNS + "/macvlan-nad-1", Interface: lab.TargetLink, IPs: []string{net1.V4.Addr().String(), net1.V6.Addr().String()}})
	b, _ := json.Marshal(es)
	return string(b)
}

// createPod creates a Pod object Running and not Ready, as kubelet leaves
// it before the readiness probes pass, marked as a pod whose `sllbrd
// target` sidecar applies its network configuration (startTarget runs it).
func (c *cluster) createPod(name string, labels map[string]string, status string) {
	c.t.Helper()
	_, err := c.kube.CoreV1().Pods(clusterNS).Create(c.ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{kube.AnnotationNetworkStatus: status,
			kube.AnnotationTargetAgent: kube.TargetAgentSidecar}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "main", Image: "example.org/x:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	c.setReady(name, false)
}

// setReady writes the pod's Ready condition as kubelet does (on the
// latest version: the controller and the sidecar patch pods too).
func (c *cluster) setReady(name string, ready bool) {
	c.t.Helper()
	if err := c.updateReady(name, ready); err != nil {
		c.t.Fatal(err)
	}
}

// updateReady is setReady returning the API's error.
func (c *cluster) updateReady(name string, ready bool) error {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	// A patch, as kubelet writes a status: other writers of the Pod (the
	// soak's bursts) cause no conflict.
	patch, err := json.Marshal(map[string]any{"status": corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.Now()}}}})
	if err != nil {
		return err
	}
	_, err = c.kube.CoreV1().Pods(clusterNS).Patch(c.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

func (c *cluster) pod(name string) *corev1.Pod {
	c.t.Helper()
	p, err := c.kube.CoreV1().Pods(clusterNS).Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return p
}

// sllbrPod is the name of LB i's Pod object.
func sllbrPod(i int) string { return fmt.Sprintf("sllbrd-sllb-a-lb%d", i) }

// startLB runs sllbrd in lb i and creates its Pod object (startLBProcess,
// postLBPod).
func (c *cluster) startLB(i int) {
	c.t.Helper()
	c.startLBProcess(i)
	c.postLBPod(i)
}

// startLBProcess runs sllbrd in lb i with the API source, as the SLLBR
// pod's container, and waits until it is ready.
func (c *cluster) startLBProcess(i int) {
	c.t.Helper()
	inst, err := e2e.StartWithArgs(c.lab, lab.LBName(i), sllbrdBinary,
		append([]string{"--kubeconfig", c.dataplane, "--namespace", clusterNS, "--queues", "2"}, c.lbArgs...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { logTail(c.t, inst) })
	c.lbs[i] = inst
	if err := inst.WaitProgrammed(c.ctx, 1); err != nil {
		c.t.Fatal(err)
	}
}

// postLBPod creates LB i's Pod object, Ready, as kubelet leaves it once
// sllbrd is ready: the labels of the controller's Deployment and the
// addresses of lb i in network-status.
func (c *cluster) postLBPod(i int) { c.postLBPodReady(i, true) }

// postLBPodReady is postLBPod with the Pod's Ready condition ready.
func (c *cluster) postLBPodReady(i int, ready bool) {
	c.t.Helper()
	vlan := lab.LBGatewaySide(i)
	rs := c.sllbrReplicaSet()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: sllbrPod(i), Labels: rs.Spec.Template.Labels,
			Annotations: map[string]string{kube.AnnotationNetworkStatus: networkStatus(i, &vlan, lab.LBTargetSide(i))},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-1", ServiceAccountName: rs.Spec.Template.Spec.ServiceAccountName,
			Containers: []corev1.Container{{Name: "sllbrd", Image: "example.org/sllbrd:1"}}},
	}
	if _, err := c.kube.CoreV1().Pods(clusterNS).Create(c.ctx, pod, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	c.setReady(sllbrPod(i), ready)
}

// sllbrReplicaSet returns the ReplicaSet of the SLLBR Deployment the
// controller created for sllb-a, creating it as the Deployment controller
// would (the lab runs none): the controller takes next hops only from pods
// whose owner chain reaches its Deployment.
func (c *cluster) sllbrReplicaSet() *appsv1.ReplicaSet {
	c.t.Helper()
	var d *appsv1.Deployment
	waitFor(c.t, 30*time.Second, "the controller's SLLBR Deployment", func() bool {
		var err error
		d, err = c.kube.AppsV1().Deployments(clusterNS).Get(c.ctx, "sllbrd-sllb-a", metav1.GetOptions{})
		return err == nil
	})
	rss := c.kube.AppsV1().ReplicaSets(clusterNS)
	name := d.Name + "-lab"
	if rs, err := rss.Get(c.ctx, name, metav1.GetOptions{}); err == nil {
		return rs
	}
	rs, err := rss.Create(c.ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: d.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Selector: d.Spec.Selector, Template: d.Spec.Template},
	}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return rs
}

// startTarget creates target i's Pod object, starts `sllbrd target` in its
// namespace with POD_NAME and POD_NAMESPACE in the environment (the
// downward API) and in a memory cgroup with the container's limit, and
// plays kubelet's readiness probe: the pod turns Ready when the sidecar's
// /readyz answers 200. It returns when the pod is Ready.
func (c *cluster) startTarget(i int) {
	c.t.Helper()
	name := lab.TargetName(i)
	c.createPod(name, map[string]string{"app": appLabel}, networkStatus(10+i, nil, lab.TargetAddrs(i)))
	cg := sidecarCgroup(c.t, c.lab, name, c.sidecarLimit)
	p, err := c.lab.StartInCgroup(name, "sllbrd-target-"+name, cg, append([]string{"env", "POD_NAME=" + name, "POD_NAMESPACE=" + clusterNS,
		c.sidecarBin, "target", "--kubeconfig", c.target, "--metrics-address", sidecarAddr, "--log-level", "debug"}, c.sidecarArgs...)...)
	if err != nil {
		_ = cg.Close()
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { // last: after the checks below
		if err := p.Stop(); err != nil {
			c.t.Logf("stop %s's sidecar: %v", name, err)
		}
		if err := cg.Close(); err != nil {
			c.t.Error(err)
		}
	})
	c.sidecars[i] = p
	c.t.Cleanup(func() {
		if c.t.Failed() {
			b, _ := os.ReadFile(p.LogPath)
			c.t.Logf("sllbrd target in %s, last log lines:\n%s", name, tail(b, 3000))
		}
	})
	waitFor(c.t, 30*time.Second, name+"'s sidecar ready", func() bool { return c.sidecarReady(i) })
	watchSidecarFaults(c.t, name, p, cg, c.sidecarLimit)
	c.setReady(name, true)
}

// sidecarReady reports whether target i's sidecar answers /readyz with 200.
func (c *cluster) sidecarReady(i int) bool {
	status, _, err := e2e.GetIn(c.lab, lab.TargetName(i), sidecarAddr, "/readyz")
	return err == nil && status == 200
}

// record notes the steps of one API write's propagation.
func (c *cluster) record(what string, steps ...string) {
	c.latencies = append(c.latencies, latency{what, steps})
	c.t.Logf("%s: %s", what, strings.Join(steps, ", "))
}

func since(step string, t0 time.Time) string {
	return fmt.Sprintf("%s %v", step, time.Since(t0).Round(time.Millisecond))
}

// newTwoLBCluster returns a cluster with two SLLBRs and three targets with
// their sidecars, once the gateway routes over both SLLBRs.
func newTwoLBCluster(t *testing.T) *cluster {
	c := newCluster(t)
	for _, i := range []int{1, 2} {
		c.startLB(i)
	}
	for _, i := range []int{1, 2, 3} {
		c.startTarget(i)
	}
	c.waitGatewayVia(1, 2)
	c.waitTables(3, 1, 2)
	return c
}

// waitTables waits until each SLLBR of lbs hashes service-a over n
// endpoints in both families in its hot path (sllbrd show services reads
// the engine, committed after the kernel's rules). The liveness metrics
// and the gateway's routes say so earlier: an SLLBR probes a new endpoint
// before the apply that adds it to its tables. A TCP flow whose handshake
// straddles that apply may move to the new endpoint between its SYN and
// its ACK, and the new endpoint resets it.
func (c *cluster) waitTables(n int, lbs ...int) {
	c.t.Helper()
	waitFor(c.t, 30*time.Second, fmt.Sprintf("SLLBRs %v hash service-a over %d endpoints per family", lbs, n), func() bool {
		for _, i := range lbs {
			if _, svc := showEndpoint(c.t, c.lbs[i], "t1"); svc.IPv4.ActiveEndpoints != n || svc.IPv6.ActiveEndpoints != n {
				return false
			}
		}
		return true
	})
}
