package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sllbrd/sllbrd/internal/admin"
	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// kubeNamespace is where the test creates sllbrd's objects.
const kubeNamespace = "sllbrd-kube-lab"

// outage is how long the restart phase keeps kube-apiserver stopped.
const outage = 4 * time.Second

// deployDir holds the CRDs, RBAC and examples shipped to users.
const deployDir = "../../deploy"

// kubeLab is the lab with a control plane that sllbrd in lb1 reaches over a
// veth pair from the test's namespace, and sllbrd running there.
type kubeLab struct {
	lab  *lab.Lab
	cp   *kubetest.ControlPlane
	kube kubernetes.Interface // admin
	inst *e2e.Instance
	// opts are the flows the phases compare; base their first answers.
	opts []lab.FlowOptions
	base []map[lab.Flow]string
}

// TestIntegrationKubeAPIServer runs sllbrd in lb1 configured from a real
// kube-apiserver, as the ServiceAccount bound by deploy/rbac (so the Role is
// proven sufficient), and checks in three phases: traffic reaches every
// target; endpoint readiness written to the API reaches the dataplane (the
// latency is logged) and moves only that endpoint's flows; single writes
// are each applied, in a median under latencyBound (whether under
// latencyGoal is logged), and a burst of 1,000 costs few applies; a
// kube-apiserver restart makes sllbrd not ready without touching the
// dataplane, and ready again only once its watches have resumed.
func TestIntegrationKubeAPIServer(t *testing.T) {
	start := time.Now()
	k := startKubeLab(t)
	for _, phase := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"all targets reached", k.checkAllTargetsReached},
		{"readiness reaches the dataplane", k.checkReadinessReachesDataplane},
		{"single write latency", k.checkWriteLatency},
		{"write burst", k.checkWriteBurst},
		{"kube-apiserver restart", k.checkAPIServerRestart},
	} {
		t.Logf("phase %q starts at %v", phase.name, time.Since(start).Round(time.Millisecond))
		phase.run(t)
	}
}

// hostLink returns the host-side veth name and the test-only /30 (from the
// benchmarking range 198.18.0.0/15) of a lab run: both derive from 12 bits
// of the run id's hash, so parallel runs do not collide (a clash fails
// loudly: the link exists).
func hostLink(l *lab.Lab) (name string, host, node netip.Prefix) {
	h := fnv.New32a()
	h.Write([]byte(l.RunID()))
	n := h.Sum32() & 0xfff
	base := [4]byte{198, 18, byte(n >> 6), byte(n&63) * 4}
	host = netip.PrefixFrom(netip.AddrFrom4([4]byte{base[0], base[1], base[2], base[3] + 1}), 30)
	node = netip.PrefixFrom(netip.AddrFrom4([4]byte{base[0], base[1], base[2], base[3] + 2}), 30)
	return fmt.Sprintf("sllbrd-kube-%03x", n), host, node
}

// connectHost links the test's network namespace to lb1 (hostLink) until
// the test ends; it returns the host side's link name and address.
func connectHost(ctx context.Context, t *testing.T, l *lab.Lab) (string, netip.Addr) {
	t.Helper()
	link, hostAddr, lbAddr := hostLink(l)
	if err := l.ConnectHost(ctx, lab.LBName(1), link, hostAddr, lbAddr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := lab.DisconnectHost(context.Background(), link); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return link, hostAddr.Addr()
}

func startKubeLab(t *testing.T) *kubeLab {
	t.Helper()
	l := labSetup(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	link, hostAddr := connectHost(ctx, t, l)
	sa := kubetest.ServiceAccount(kubeNamespace, "sllbrd")
	start := time.Now()
	cp := kubetest.StartAt(t, hostAddr, sa)
	t.Logf("control plane up in %v at %s", time.Since(start).Round(time.Millisecond), cp.Host())
	k := &kubeLab{lab: l, cp: cp, kube: kubernetes.NewForConfigOrDie(cp.AdminConfig())}
	k.createObjects(ctx, t)
	inst, err := e2e.StartWithArgs(l, lab.LBName(1), sllbrdBinary,
		"--kubeconfig", cp.Kubeconfig(sa.Name), "--namespace", kubeNamespace, "--queues", "2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logTail(t, inst) })
	k.inst = inst
	if err := inst.WaitProgrammed(ctx, 1); err != nil {
		t.Fatalf("%v\n%s", err, k.linkState(link))
	}
	if err := l.RouteVIPsVia(ctx, 1); err != nil {
		t.Fatal(err)
	}
	return k
}

// createObjects installs the CRDs, creates the namespace with deploy/rbac
// in it, the GatewayClass, and the objects of the lab's manifests (Gateway
// sllb-a, static GatewayRouters, service-a with t1..t3, an L34Route to both
// VIPs).
func (k *kubeLab) createObjects(ctx context.Context, t *testing.T) {
	t.Helper()
	client, err := kubetest.NewClient(k.cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kubeNamespace}}
	if _, err := k.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	crds, _ := filepath.Glob(filepath.Join(deployDir, "crds", "*.yaml"))
	gatewayCRDs, err := kubetest.GatewayAPICRDs()
	if err != nil {
		t.Fatal(err)
	}
	if err := client.InstallCRDs(ctx, append(crds, gatewayCRDs...)...); err != nil {
		t.Fatalf("install CRDs: %v", err)
	}
	dir := t.TempDir()
	if err := e2e.Write(dir, e2e.Config{Services: allTargets, Routes: webRoute}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(deployDir, "rbac", "*.yaml"))
	files = append(files, filepath.Join(deployDir, "examples", "gatewayclass.yaml"), filepath.Join(dir, "sllb-a.yaml"))
	objs, err := kubetest.ReadObjects(files...)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if _, err := client.Create(ctx, kubeNamespace, o); err != nil {
			t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// checkAllTargetsReached: UDP and TCP flows to both VIPs reach all three
// targets; the UDP ones on port 5001 become the baseline of later phases.
func (k *kubeLab) checkAllTargetsReached(t *testing.T) {
	k.opts = []lab.FlowOptions{{VIP: vip4, Port: 5001, Count: 150}, {VIP: vip6, Port: 5001, Count: 150}}
	all := append(slices.Clone(k.opts),
		lab.FlowOptions{VIP: vip4, Port: 80, Proto: "tcp", Count: 60}, lab.FlowOptions{VIP: vip6, Port: 80, Proto: "tcp", Count: 60})
	for i, o := range all {
		got := flows(t, k.lab, o)
		dist := lab.Distribution(got)
		t.Logf("%s flows to %v port %d: %v", o.Proto, o.VIP, o.Port, dist)
		if len(dist) != 3 {
			t.Fatalf("%s flows to %v reached %d targets, want 3: %v", o.Proto, o.VIP, len(dist), dist)
		}
		if i < len(k.opts) {
			k.base = append(k.base, got)
		}
	}
}

// t2Endpoints names the EndpointSlices of service-a and target t2's address
// in each.
var t2Endpoints = []struct{ slice, addr string }{
	{"service-a-v4", lab.TargetAddrs(2).V4.Addr().String()},
	{"service-a-v6", lab.TargetAddrs(2).V6.Addr().String()},
}

// checkReadinessReachesDataplane turns t2 not ready, ready and not ready
// again through the API, one EndpointSlice write at a time, and logs the
// time from each write returning to sllbrd having applied it; flows of t2
// move away and come back, no other flow moves.
func (k *kubeLab) checkReadinessReachesDataplane(t *testing.T) {
	var lat []time.Duration
	lat = append(lat, k.setT2Ready(t, false, 10*time.Second)...)
	k.checkOnlyT2Moved(t, "t2 not ready")
	lat = append(lat, k.setT2Ready(t, true, 10*time.Second)...)
	k.checkFlows(t, "t2 ready again", k.base)
	for range 3 { // more samples
		lat = append(lat, k.setT2Ready(t, false, 10*time.Second)...)
		lat = append(lat, k.setT2Ready(t, true, 10*time.Second)...)
	}
	lat = append(lat, k.setT2Ready(t, false, 10*time.Second)...)
	k.checkOnlyT2Moved(t, "t2 not ready")
	slices.Sort(lat)
	t.Logf("API write -> dataplane applied, %d writes: min %v median %v max %v",
		len(lat), lat[0].Round(time.Millisecond), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
}

// setT2Ready writes t2's readiness into each EndpointSlice, one write at a
// time, and returns for each write the time from the API call returning to
// sllbrd reporting the generation it caused as applied.
func (k *kubeLab) setT2Ready(t *testing.T, ready bool, timeout time.Duration) []time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lat []time.Duration
	for _, ep := range t2Endpoints {
		gen := k.generation(t)
		k.writeT2(ctx, t, ep.slice, ep.addr, ready)
		written := time.Now()
		k.waitApplied(t, gen+1, timeout)
		lat = append(lat, time.Since(written))
	}
	return lat
}

// writeT2 writes t2's readiness into one EndpointSlice.
func (k *kubeLab) writeT2(ctx context.Context, t *testing.T, slice, addr string, ready bool) {
	t.Helper()
	client := k.kube.DiscoveryV1().EndpointSlices(kubeNamespace)
	s, err := client.Get(ctx, slice, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get EndpointSlice %s: %v", slice, err)
	}
	i := slices.IndexFunc(s.Endpoints, func(e discoveryv1.Endpoint) bool {
		return slices.Contains(e.Addresses, addr)
	})
	if i < 0 {
		t.Fatalf("EndpointSlice %s has no endpoint %s", slice, addr)
	}
	s.Endpoints[i].Conditions.Ready = &ready
	if _, err := client.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update EndpointSlice %s: %v", slice, err)
	}
}

// checkAPIServerRestart stops kube-apiserver: sllbrd reports its source
// out of sync (metric, `show config` naming the API server) and stays
// ready, flows keep reaching the same targets and nothing is reprogrammed.
// Writes made right after the restart are applied before the source is
// back in sync (its watches have resumed, not only the server's /readyz),
// and cause no more generations than the writes.
func (k *kubeLab) checkAPIServerRestart(t *testing.T) {
	gen := k.generation(t)
	moved := k.flowsNow(t)
	stopping := time.Now()
	k.cp.StopAPIServer()
	stopped := time.Now()
	k.waitInSync(t, 0, 20*time.Second)
	var cfg admin.Config
	sllbrdJSON(t, k.inst.AdminSocket, &cfg, "show", "config")
	t.Logf("kube-apiserver stopped in %v: out of sync %v after the stop began: %q",
		stopped.Sub(stopping).Round(time.Millisecond), time.Since(stopping).Round(time.Millisecond), cfg.Problems)
	if !slices.ContainsFunc(cfg.Problems, func(p string) bool { return strings.Contains(p, "API server") }) {
		t.Errorf("show config problems %q do not name the API server", cfg.Problems)
	}
	// Traffic through the whole outage, long enough for the informers to
	// fail and retry their watches; sllbrd stays ready: its pod stays a
	// next hop of the targets.
	for rounds := 1; ; rounds++ {
		k.checkFlows(t, "kube-apiserver down", moved)
		if status, body, err := k.inst.Get("/readyz"); err != nil || status != 200 {
			t.Errorf("kube-apiserver down: /readyz %d %q (%v), want 200: the last state is served", status, body, err)
		}
		if time.Since(stopping) > outage {
			t.Logf("%d rounds of %d flows answered by the same targets during %v of outage",
				rounds, len(k.opts)*k.opts[0].Count, time.Since(stopping).Round(time.Millisecond))
			break
		}
	}
	k.checkGeneration(t, "kube-apiserver down", gen)

	starting := time.Now()
	k.cp.StartAPIServer() // returns once its own /readyz answers
	started := time.Now()
	k.checkGeneration(t, "kube-apiserver restarted", gen)

	// Writes made at once, before sllbrd's watches resumed: the
	// source must not be in sync before they are applied, and they are
	// applied as the generations they cause (the relist reprogrammed
	// nothing).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ep := range t2Endpoints {
		k.writeT2(ctx, t, ep.slice, ep.addr, true)
	}
	written := time.Now()
	k.waitInSync(t, 1, 45*time.Second)
	synced := time.Now()
	atSync := k.generation(t)
	t.Logf("kube-apiserver started in %v; writes done %v later; sllbrd in sync %v after the writes, at generation %d",
		started.Sub(starting).Round(time.Millisecond), written.Sub(started).Round(time.Millisecond),
		synced.Sub(written).Round(time.Millisecond), atSync)
	if atSync <= gen {
		t.Errorf("in sync at generation %d: before the writes made after the restart were applied (generation %d before)", atSync, gen)
	}
	k.checkStaysAt(t, atSync, time.Second) // everything written was in it
	if atSync > gen+2 {
		t.Errorf("generation %d after two writes from %d: the relist reprogrammed more", atSync, gen)
	}
	k.checkFlows(t, "t2 ready after the restart", k.base)
}

// waitInSync polls sllbrd_config_source_in_sync until it is want.
func (k *kubeLab) waitInSync(t *testing.T, want float64, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v, ok, err := k.inst.Metric("sllbrd_config_source_in_sync")
		if err == nil && ok && v == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sllbrd_config_source_in_sync not %v within %v (last: %v, found %v, err %v)", want, timeout, v, ok, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkStaysAt fails if sllbrd applies another generation than gen within d.
func (k *kubeLab) checkStaysAt(t *testing.T, gen uint64, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if g := k.generation(t); g != gen {
			t.Fatalf("generation %d applied after generation %d was final", g, gen)
		}
	}
}

// generation returns the generation sllbrd last applied.
func (k *kubeLab) generation(t *testing.T) uint64 {
	t.Helper()
	v, ok, err := k.inst.Metric("sllbrd_config_last_applied_generation")
	if err != nil || !ok {
		t.Fatalf("sllbrd_config_last_applied_generation: found %v, %v", ok, err)
	}
	return uint64(v)
}

func (k *kubeLab) checkGeneration(t *testing.T, when string, want uint64) {
	t.Helper()
	if got := k.generation(t); got != want {
		t.Errorf("%s: applied generation %d, want %d", when, got, want)
	}
}

// waitApplied polls the admin endpoint every 10ms until sllbrd reports gen
// (or later) applied.
func (k *kubeLab) waitApplied(t *testing.T, gen uint64, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v, ok, err := k.inst.Metric("sllbrd_config_last_applied_generation")
		if err == nil && ok && uint64(v) >= gen {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("generation %d not applied within %v (last: %v, found %v, err %v)", gen, timeout, v, ok, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitReadyz polls /readyz until it answers status and returns the body.
func (k *kubeLab) waitReadyz(t *testing.T, status int, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got, body, err := k.inst.Get("/readyz")
		if err == nil && got == status {
			return strings.TrimSpace(body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz did not answer %d within %v (last: %d %q, err %v)", status, timeout, got, body, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// flowsNow runs the baseline flows again and returns where they landed.
func (k *kubeLab) flowsNow(t *testing.T) []map[lab.Flow]string {
	t.Helper()
	var out []map[lab.Flow]string
	for _, o := range k.opts {
		out = append(out, flows(t, k.lab, o))
	}
	return out
}

// checkFlows fails unless the baseline flows land where want says.
func (k *kubeLab) checkFlows(t *testing.T, when string, want []map[lab.Flow]string) {
	t.Helper()
	for i, got := range k.flowsNow(t) {
		if !maps.Equal(got, want[i]) {
			t.Errorf("%s: %d of %d flows to %v reached another target than expected", when, differing(want[i], got), len(got), k.opts[i].VIP)
		}
	}
}

// checkOnlyT2Moved fails unless no baseline flow reaches t2 and every flow
// that did not reach t2 before still reaches the same target.
func (k *kubeLab) checkOnlyT2Moved(t *testing.T, when string) {
	t.Helper()
	for i, after := range k.flowsNow(t) {
		for f, was := range k.base[i] {
			switch now := after[f]; {
			case now == "t2":
				t.Errorf("%s: flow %v still reaches t2", when, f)
			case was != "t2" && now != was:
				t.Errorf("%s: flow %v moved from %s to %s, but only t2's flows may move", when, f, was, now)
			}
		}
		t.Logf("%s, %v: %d of %d flows were on t2 and moved", when, k.opts[i].VIP, lab.Distribution(k.base[i])["t2"], len(after))
	}
}

// linkState describes the path from lb1 to kube-apiserver, for failures.
func (k *kubeLab) linkState(hostIf string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	for _, cmd := range [][]string{{"ip", "-br", "addr"}, {"ip", "rule"}, {"ss", "-tnpi"}} {
		out, err := k.lab.Exec(ctx, lab.LBName(1), cmd...)
		fmt.Fprintf(&b, "lb1$ %s (err %v)\n%s", strings.Join(cmd, " "), err, out)
	}
	out, err := exec.CommandContext(ctx, "ip", "-s", "link", "show", hostIf).CombinedOutput()
	fmt.Fprintf(&b, "host$ ip -s link show %s (err %v)\n%s", hostIf, err, out)
	return b.String()
}
