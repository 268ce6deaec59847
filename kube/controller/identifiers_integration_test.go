package controller_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sllbrd/sllbrd/kube/controller"
)

// serviceEnv is an env with the Gateway sllb-a and its Service service-a,
// which selects app t, recording every version of the slices from the
// start.
type serviceEnv struct {
	*env
	history *sliceHistory
	network string
}

func newServiceEnv(t *testing.T, ns string) *serviceEnv {
	t.Helper()
	e := &serviceEnv{env: newEnv(t, ns), network: ns + "/" + nadName}
	e.history = e.recordSlices()
	e.createClass()
	e.createGateway(gatewayObject("sllb-a"))
	e.createService("service-a", "sllb-a", "t", 0)
	return e
}

// pod is a ready pod of service-a on a node (deleted gracefully) with the
// addresses 169.111.100.n and fd00:111::n.
func (e *serviceEnv) pod(name string, n int) podSpec {
	return podSpec{name: name, app: "t", ready: true, node: "node-1",
		status: networkStatus(e.network, fmt.Sprintf("169.111.100.%d", n), fmt.Sprintf("fd00:111::%d", n))}
}

// expect waits until the identifiers of service-a's endpoints are want.
func (e *serviceEnv) expect(what string, want map[string]int) {
	e.t.Helper()
	e.waitEndpoints("service-a", fmt.Sprint(what, ": ", want), func(eps map[string]endpoint) bool { return maps.Equal(ids(eps), want) })
}

// leadWithFour starts controller a, waits until it leads, and creates the
// pods r1..r4, which get the identifiers 0..3.
func (e *serviceEnv) leadWithFour() *running {
	e.t.Helper()
	a := e.startController("a")
	e.waitLeading(a)
	for i := 1; i <= 4; i++ {
		e.createPod(e.pod(fmt.Sprintf("r%d", i), i))
	}
	e.expect("first assignment", map[string]int{"r1": 0, "r2": 1, "r3": 2, "r4": 3})
	return a
}

// TestIntegrationMaxEndpoints scales a Service past its max-endpoints and
// back: the oldest pods keep identifiers, the others wait with an Event and
// a metric, and a freed identifier goes to the oldest waiting pod.
func TestIntegrationMaxEndpoints(t *testing.T) {
	e := newEnv(t, "sllbrd-ctl-max")
	e.createClass()
	e.createGateway(gatewayObject("sllb-a"))
	e.createService("service-b", "sllb-a", "b", 3)
	r := e.startController("only")
	e.waitLeading(r)
	net := "sllbrd-ctl-max/" + nadName
	pod := func(name string, n int) podSpec {
		return podSpec{name: name, app: "b", ready: true,
			status: networkStatus(net, fmt.Sprintf("169.111.100.%d", n), fmt.Sprintf("fd00:111::%d", n))}
	}
	// z-first is older than the others (a later second): it wins over
	// names that sort before it.
	first := e.createPod(pod("z-first", 1))
	for !time.Now().Add(-time.Second).After(first.CreationTimestamp.Time) {
		time.Sleep(20 * time.Millisecond)
	}
	for i, n := range []string{"a-second", "b-third", "c-fourth", "d-fifth"} {
		e.createPod(pod(n, i+2))
	}
	overLimit := func() float64 {
		return metricValue(t, r.metrics, "sllbrd_controller_service_pods_over_limit", map[string]string{"service": "service-b"})
	}
	want := map[string]int{"z-first": 0, "a-second": 1, "b-third": 2}
	e.waitEndpoints("service-b", fmt.Sprint("identifiers ", want), func(eps map[string]endpoint) bool { return maps.Equal(ids(eps), want) })
	for _, p := range []string{"c-fourth", "d-fifth"} {
		e.waitEvent("Pod", p, "EndpointsOverLimit", "all 3 identifiers")
	}
	e.waitEvent("Service", "service-b", "EndpointsOverLimit", "pods are left out: all 3 identifiers (meridio-experiment/max-endpoints) are in use")
	e.waitFor("2 pods over the limit in the metric", func() (bool, string) { return overLimit() == 2, fmt.Sprint(overLimit()) })

	e.deletePod("a-second", 0)
	want = map[string]int{"z-first": 0, "c-fourth": 1, "b-third": 2}
	e.waitEndpoints("service-b", fmt.Sprint("c-fourth takes 1: ", want), func(eps map[string]endpoint) bool { return maps.Equal(ids(eps), want) })
	e.deletePod("b-third", 0)
	want = map[string]int{"z-first": 0, "c-fourth": 1, "d-fifth": 2}
	e.waitEndpoints("service-b", fmt.Sprint("d-fifth takes 2: ", want), func(eps map[string]endpoint) bool { return maps.Equal(ids(eps), want) })
	e.waitFor("no pod over the limit", func() (bool, string) { return overLimit() == 0, fmt.Sprint(overLimit()) })

	e.deletePod("c-fourth", 0)
	e.deletePod("z-first", 0)
	want = map[string]int{"d-fifth": 2}
	e.waitEndpoints("service-b", fmt.Sprint("scaled back: ", want), func(eps map[string]endpoint) bool { return maps.Equal(ids(eps), want) })
	checkDataplaneReads(t, e, "sllb-a", "service-b", 2)
}

// TestIntegrationIdentifiersSurviveRestartAndHandover stops and starts
// controllers (fresh memory each) and hands the Lease over between two
// replicas: no pod's identifier ever changes in any version of the slices,
// only the leader writes, and a stopped leader releases the Lease.
func TestIntegrationIdentifiersSurviveRestartAndHandover(t *testing.T) {
	e := newServiceEnv(t, "sllbrd-ctl-ha")
	pod, expect := e.pod, e.expect

	a := e.leadWithFour()
	if err := a.stop(); err != nil {
		t.Fatalf("controller a: %v", err)
	}
	e.checkLeaseReleased("after a stopped")

	// Changes while no controller runs; b starts with an empty memory.
	e.deletePod("r2", 0)
	e.createPod(pod("r5", 5))
	b := e.startController("b")
	took := e.waitLeading(b)
	t.Logf("b took the released Lease in %v", took.Round(time.Millisecond))
	expect("after the restart", map[string]int{"r1": 0, "r3": 2, "r4": 3, "r5": 1})

	// c stands by while b leads: it writes nothing.
	c := e.startController("c")
	e.waitFor("c synced", func() (bool, string) { ok, _ := c.ctl.Ready(); return ok, "" })
	e.createPod(pod("r6", 6))
	expect("b assigns r6", map[string]int{"r1": 0, "r3": 2, "r4": 3, "r5": 1, "r6": 4})
	if c.ctl.Leading() || metricValue(t, c.metrics, "sllbrd_controller_leader", nil) != 0 {
		t.Fatalf("c leads while b holds the Lease")
	}
	for _, kind := range []string{"Service", "Gateway", "GatewayClass"} {
		for _, result := range []string{"success", "error", "conflict", "stale"} {
			if n := metricValue(t, c.metrics, "sllbrd_controller_reconciles_total", map[string]string{"kind": kind, "result": result}); n != 0 {
				t.Errorf("standby c reconciled %s %v times (%s)", kind, n, result)
			}
		}
	}

	// Hand-over: b stops (as on SIGTERM), c takes over.
	stopped := time.Now()
	if err := b.stop(); err != nil {
		t.Fatalf("controller b: %v", err)
	}
	e.waitLeading(c)
	t.Logf("hand-over: c leads %v after b began to stop", time.Since(stopped).Round(time.Millisecond))
	e.createPod(pod("r7", 7))
	expect("c assigns r7", map[string]int{"r1": 0, "r3": 2, "r4": 3, "r5": 1, "r6": 4, "r7": 5})
	e.setPodReady(e.getPod("r1"), false)
	eps := e.waitEndpoints("service-a", "r1 not ready", func(eps map[string]endpoint) bool { return !eps["r1"].ready })
	if eps["r1"].id != 0 {
		t.Errorf("r1 moved to %d after a readiness change", eps["r1"].id)
	}
	checkDataplaneReads(t, e.env, "sllb-a", "service-a", 12)
	checkNoFlip(t, e.history.events(t), "service-a", nil)
}

// checkLeaseReleased fails unless the Lease has no holder.
func (e *env) checkLeaseReleased(when string) {
	e.t.Helper()
	lease, err := e.kube.CoordinationV1().Leases(e.ns).Get(e.ctx, controller.DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("%s: get Lease: %v", when, err)
	}
	if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != "" {
		e.t.Errorf("%s: the Lease is still held by %q", when, h)
	}
}

// TestIntegrationHandOverToAStandbyBehind hands the Lease to a standby
// whose caches lag the API server (its pod watch by podLag, its slice
// watch by sliceLag: the old leader's slices reach it before the pods
// they were computed from), in the middle of pod replacements, and
// checks every version of the slices the API server held: no endpoint
// ever shows another identifier than it had or leaves and comes back,
// and each replacement is listed first with the identifier of the pod it
// replaces, never a fresh one.
func TestIntegrationHandOverToAStandbyBehind(t *testing.T) {
	const podLag, sliceLag = 4 * time.Second, time.Second
	e := newServiceEnv(t, "sllbrd-ctl-behind")
	pod, expect := e.pod, e.expect

	a := e.leadWithFour()
	b := e.startControllerWith(lagging(e.ctlSA, map[string]time.Duration{"pods": podLag, "endpointslices": sliceLag}), "b")
	e.waitFor("b synced", func() (bool, string) { ok, _ := b.ctl.Ready(); return ok, "" })

	// r2 is replaced; a lists the replacement with r2's identifier, then
	// hands over at once: b leads with caches from before the replacement.
	e.deletePod("r2", 30)
	replaced := time.Now()
	e.createPod(pod("r2-new", 12))
	expect("a hands r2's identifier to r2-new", map[string]int{"r1": 0, "r2-new": 1, "r3": 2, "r4": 3})
	if err := a.stop(); err != nil {
		t.Fatalf("controller a: %v", err)
	}
	e.waitLeading(b)
	if led := time.Since(replaced); led > podLag-time.Second {
		t.Fatalf("b led %v after the replacement, its pod watch lags %v: its cache may have caught up, the test did not make its case", led, podLag)
	}
	t.Logf("b leads %v after the replacement, with a pod cache %v behind", time.Since(replaced).Round(time.Millisecond), podLag)
	// More replacements and a new pod while b is behind.
	e.deletePod("r3", 30)
	e.createPod(pod("r3-new", 13))
	e.createPod(pod("r5", 5))
	expect("b after its caches caught up", map[string]int{"r1": 0, "r2-new": 1, "r3-new": 2, "r4": 3, "r5": 4})

	n := checkNoFlip(t, e.history.events(t), "service-a", map[string]string{"r2-new": "r2", "r3-new": "r3"})
	t.Logf("%d versions of the slices checked", n)
}

// TestIntegrationOneAddressOnePod gives a new pod the address of a running
// one, as static IPAM does in a rollout: the running pod keeps the address
// and its identifier, the newcomer waits with a DuplicateAddress Event,
// and takes both over when the old pod is deleted.
func TestIntegrationOneAddressOnePod(t *testing.T) {
	e := newServiceEnv(t, "sllbrd-ctl-dup")
	pod, expect := e.pod, e.expect
	r := e.startController("only")
	e.waitLeading(r)
	e.createPod(pod("a", 1))
	e.createPod(pod("b", 2))
	expect("a and b", map[string]int{"a": 0, "b": 1})
	e.createPod(pod("a-surge", 1))
	e.waitEvent("Pod", "a-surge", "DuplicateAddress",
		"not an endpoint of Service service-a: its address 169.111.100.1 is the endpoint address of pod a, which comes first: it is listed with the address already")
	e.waitFor("the duplicate counted", func() (bool, string) {
		got := metricValue(t, r.metrics, "sllbrd_controller_service_pods_skipped", map[string]string{"service": "service-a", "reason": "DuplicateAddress"})
		return got == 1, fmt.Sprint(got)
	})
	expect("a keeps its address", map[string]int{"a": 0, "b": 1})
	e.deletePod("a", 30)
	expect("a-surge takes a's address and identifier", map[string]int{"a-surge": 0, "b": 1})
	checkNoFlip(t, e.history.events(t), "service-a", map[string]string{"a-surge": "a"})
}
