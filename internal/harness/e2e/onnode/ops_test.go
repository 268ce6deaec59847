package onnode

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sllbrd/sllbrd/internal/admin"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/kube"
)

// setReplicas edits the SLLBRConfig (the Gateway's parameters ConfigMap)
// as a user would.
func (e *env) setReplicas(from, to int) {
	e.t.Helper()
	cm, err := e.kube.CoreV1().ConfigMaps(ns).Get(e.ctx, "sllb-a-config", metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	text := cm.Data["config.conf"]
	old := fmt.Sprintf("replicas: %d\n", from)
	if !strings.Contains(text, old) {
		e.t.Fatalf("the SLLBRConfig has no %q: %s", old, text)
	}
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{"config.conf": strings.Replace(text, old, fmt.Sprintf("replicas: %d\n", to), 1)}})
	if _, err := e.kube.CoreV1().ConfigMaps(ns).Patch(e.ctx, cm.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// waitSLLBRs waits until the SLLBR Deployment has n replicas, all Ready, no
// other pod of it left, BIRD routes through exactly them and every
// application pod has them as next hops.
func (e *env) waitSLLBRs(n int, what string) {
	e.t.Helper()
	e.waitFor(3*time.Minute, what+": the SLLBR Deployment", func() (bool, string) {
		if ok, why := e.deploymentReady(sllbrName); !ok {
			return false, why
		}
		pods := e.pods(sllbrSelector)
		return len(pods) == n, fmt.Sprintf("%d SLLBR pods: %s", len(pods), strings.Join(podNames(pods), " "))
	})
	e.waitFor(time.Minute, what+": BIRD", func() (bool, string) { return e.birdSeesAll(e.pods(sllbrSelector)) })
	e.waitFor(time.Minute, what+": the application pods' next hops", func() (bool, string) {
		return e.targetsConfigured(e.pods(appSelector), n)
	})
}

// phaseScaling: the SLLBRConfig's replicas 2 -> 3 -> 2 with long-lived
// connections open: none breaks.
func (e *env) phaseScaling() {
	ld := e.startLoad()
	start := time.Now()
	e.setReplicas(2, 3)
	e.waitSLLBRs(3, "replicas 3")
	e.record("SLLBRConfig replicas 2 -> 3: a third SLLBR pod routes", time.Since(start))
	start = time.Now()
	e.setReplicas(3, 2)
	e.waitSLLBRs(2, "replicas 2")
	e.record("SLLBRConfig replicas 3 -> 2: back to two", time.Since(start))
	r := ld.stop()
	e.t.Logf("scaling 2 -> 3 -> 2: %v", r)
	e.records = append(e.records, "  scaling 2 -> 3 -> 2: "+r.String())
	if len(r.broken) > 0 {
		e.t.Errorf("long-lived connections broken by scaling: %v", r.broken)
	}
}

// phaseTargetDeleted: `kubectl delete pod` of an application pod. Its
// replacement takes the freed identifier, so once it is Ready every flow
// reaches the same pod as before, the deleted pod's flows its replacement.
// It returns base with the deleted pod's flows on its replacement.
func (e *env) phaseTargetDeleted(base map[lab.Flow]string) map[lab.Flow]string {
	apps := e.pods(appSelector)
	victim := apps[1]
	before := e.identifiers()
	start := time.Now()
	e.k("delete", "pod", victim.Name)
	var repl string
	e.waitFor(3*time.Minute, "the replacement application pod", func() (bool, string) {
		if ok, why := e.deploymentReady(appName); !ok {
			return false, why
		}
		now := podNames(e.pods(appSelector))
		if len(now) != 3 || slices.Contains(now, victim.Name) {
			return false, fmt.Sprint(now)
		}
		for _, n := range now {
			if !slices.Contains(podNames(apps), n) {
				repl = n
			}
		}
		return true, ""
	})
	e.waitFor(time.Minute, "every application pod configured", func() (bool, string) {
		return e.targetsConfigured(e.pods(appSelector), 2)
	})
	after := e.identifiers()
	if id, ok := before[victim.Name]; !ok || after[repl] != id {
		e.t.Errorf("identifiers before %v, after %v: %s should have %s's", before, after, repl, victim.Name)
	}
	e.waitTables("pod "+victim.Name+" deleted", e.pods(appSelector))
	e.waitFor(time.Minute, "the replacement's flows", func() (bool, string) {
		moved := e.compareFlows(base, func(was string) string {
			if was == victim.Name {
				return repl
			}
			return was
		})
		return len(moved) == 0, strings.Join(moved, "; ")
	})
	e.record(fmt.Sprintf("pod %s deleted: %s takes its identifier and exactly its flows", victim.Name, repl), time.Since(start))
	now := maps.Clone(base)
	for f, to := range now {
		if to == victim.Name {
			now[f] = repl
		}
	}
	return now
}

// compareFlows reruns the flows of base and lists those that did not reach
// want(the pod that answered them in base).
func (e *env) compareFlows(base map[lab.Flow]string, want func(string) string) []string {
	var out []string
	for _, vip := range vips {
		for _, s := range flowSets {
			got := e.runFlows(vip, s, flowsPerSet)
			for f, to := range got {
				was, ok := base[f]
				if !ok {
					e.t.Fatalf("flow %s is not in the baseline", f)
				}
				if w := want(was); to != w {
					out = append(out, fmt.Sprintf("%s: %s, want %s", f, to, w))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// identifiers maps each application pod to its endpoint identifier, from
// the controller's EndpointSlices of service-a (both families must agree).
func (e *env) identifiers() map[string]int {
	e.t.Helper()
	slices, err := e.kube.DiscoveryV1().EndpointSlices(ns).List(e.ctx, metav1.ListOptions{LabelSelector: ourSlices + ",kubernetes.io/service-name=service-a"})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]int{}
	for _, s := range slices.Items {
		var ids map[string]int
		if err := json.Unmarshal([]byte(s.Annotations[kube.AnnotationEndpointIdentifiers]), &ids); err != nil {
			e.t.Fatalf("%s: %v", s.Name, err)
		}
		for _, ep := range s.Endpoints {
			if ep.TargetRef == nil || len(ep.Addresses) == 0 {
				continue
			}
			id, ok := ids[ep.Addresses[0]]
			if prev, seen := out[ep.TargetRef.Name]; !ok || (seen && prev != id) {
				e.t.Fatalf("%s: endpoint %s of %s has identifiers %v", s.Name, ep.Addresses[0], ep.TargetRef.Name, ids)
			}
			out[ep.TargetRef.Name] = id
		}
	}
	return out
}

// phaseRolloutRestarts: `kubectl rollout restart` of the SLLBR Deployment,
// then of the controller, under load; what each costs is measured.
func (e *env) phaseRolloutRestarts() {
	for _, d := range []string{sllbrName, controllerName} {
		ld := e.startLoad()
		start := time.Now()
		e.k("rollout", "restart", "deployment/"+d)
		e.k("rollout", "status", "deployment/"+d, "--timeout=5m")
		if d == sllbrName {
			e.waitSLLBRs(2, "after the rollout")
		}
		// A few seconds more of traffic on the new pods.
		time.Sleep(3 * time.Second)
		r := ld.stop()
		e.record("kubectl rollout restart deployment/"+d, time.Since(start))
		e.records = append(e.records, "  "+r.String())
		e.t.Logf("rollout restart of %s: %v", d, r)
		if len(r.broken) > 0 {
			e.t.Errorf("connections broken by the rollout of %s: %v", d, r.broken)
		}
	}
}

// phaseLeaderKilled: the leading controller's process is killed (SIGKILL:
// it releases nothing). Once the Lease expires another controller process
// takes it: the standby, or the killed one's container restarted by the
// kubelet, whichever campaigns first. No EndpointSlice or application pod
// annotation is rewritten.
func (e *env) phaseLeaderKilled() {
	// Right after a rollout the Lease may have no holder: the old leader
	// released it on SIGTERM and a new replica acquires it within a retry
	// period.
	var killed string
	var err error
	e.waitFor(time.Minute, "a controller leads", func() (bool, string) {
		killed, err = e.leaderIdentity()
		return err == nil && killed != "", fmt.Sprint(killed, err)
	})
	leader, _, _ := strings.Cut(killed, "_")
	var pod corev1.Pod
	for _, p := range e.pods(map[string]string{"app.kubernetes.io/name": controllerName}) {
		if p.Name == leader {
			pod = p
		}
	}
	if pod.Name == "" {
		e.t.Fatalf("the leader %s is not a controller pod", leader)
	}
	versions := e.sliceVersions()
	targets := e.targetAnnotations()
	start := time.Now()
	if err := syscall.Kill(e.containerPID(pod, "controller"), syscall.SIGKILL); err != nil {
		e.t.Fatal(err)
	}
	var now string
	took := e.waitFor(time.Minute, "another controller process leads", func() (bool, string) {
		now, err = e.leaderIdentity()
		return err == nil && now != "" && now != killed, fmt.Sprint(now, err)
	})
	who := "the standby"
	if strings.HasPrefix(now, leader+"_") {
		who = "the killed pod's restarted container"
	}
	e.record("leader controller killed: "+who+" leads", took)
	e.waitFor(2*time.Minute, "the killed controller restarts", func() (bool, string) { return e.deploymentReady(controllerName) })
	// The new leader has synced and reconciled everything by now.
	time.Sleep(5 * time.Second)
	if now := e.sliceVersions(); !maps.Equal(now, versions) {
		e.t.Errorf("EndpointSlices rewritten across the failover: %v -> %v", versions, now)
	}
	if now := e.targetAnnotations(); !maps.Equal(now, targets) {
		e.t.Errorf("application pods' configuration rewritten across the failover")
	}
	e.record("  EndpointSlices and target configurations untouched", time.Since(start))
}

// ourSlices selects the controller's EndpointSlices (the controller
// manager's own, empty by the Service's dummy selector, are not sllbrd's).
const ourSlices = kube.LabelEndpointSliceManagedBy + "=" + kube.EndpointSliceManager

// sliceVersions maps each of the controller's EndpointSlices to its
// resourceVersion.
func (e *env) sliceVersions() map[string]string {
	e.t.Helper()
	list, err := e.kube.DiscoveryV1().EndpointSlices(ns).List(e.ctx, metav1.ListOptions{LabelSelector: ourSlices})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range list.Items {
		out[s.Name] = s.ResourceVersion
	}
	return out
}

// targetAnnotations maps each application pod to its desired network
// configuration (what the controller writes).
func (e *env) targetAnnotations() map[string]string {
	out := map[string]string{}
	for _, p := range e.pods(appSelector) {
		out[p.Name] = p.Annotations[kube.AnnotationTargetNetwork]
	}
	return out
}

// phaseNodeRestarts: the kubelet, then containerd, restarted under load:
// the running pods keep forwarding (nothing lost) and keep running (same
// containers, no restart).
func (e *env) phaseNodeRestarts() {
	containers := e.containerIDs()
	ld := e.startLoad()
	took, err := e.node.RestartKubelet(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	e.record("kubelet restarted", took)
	if took, err = e.node.RestartContainerd(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.record("containerd restarted", took)
	e.waitFor(time.Minute, "the node Ready and every Deployment Available", func() (bool, string) {
		for _, d := range []string{controllerName, sllbrName, appName} {
			if ok, why := e.deploymentReady(d); !ok {
				return false, why
			}
		}
		return true, ""
	})
	time.Sleep(3 * time.Second)
	r := ld.stop()
	e.records = append(e.records, "  kubelet and containerd restarts: "+r.String())
	if r.lost > 0 || len(r.broken) > 0 {
		e.t.Errorf("traffic lost while the kubelet and containerd restarted: %v %v", r, r.broken)
	}
	if now := e.containerIDs(); !maps.Equal(now, containers) {
		e.t.Errorf("containers replaced across the restarts: %v -> %v", containers, now)
	}
}

// containerIDs maps pod/container to its container ID and restart count.
func (e *env) containerIDs() map[string]string {
	e.t.Helper()
	list, err := e.kube.CoreV1().Pods(ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		for _, c := range p.Status.ContainerStatuses {
			out[p.Name+"/"+c.Name] = fmt.Sprintf("%s #%d", c.ContainerID, c.RestartCount)
		}
	}
	return out
}

// phaseExec: `kubectl exec` into each SLLBR pod runs `sllbrd show` and
// `sllbrd explain`, which names the application pod that answered the
// flow.
func (e *env) phaseExec(base map[lab.Flow]string) {
	addrOf := map[netip.Addr]string{}
	for _, p := range e.pods(appSelector) {
		for _, a := range podAddrs(p, "net1") {
			addrOf[a] = p.Name
		}
	}
	var f lab.Flow
	for fl := range base {
		if fl.Proto == "tcp" && (f.Proto == "" || fl.String() < f.String()) {
			f = fl
		}
	}
	for _, p := range e.pods(sllbrSelector) {
		out := e.k("exec", p.Name, "--", "/sllbrd", "show", "services")
		if !strings.Contains(out, "service-a") {
			e.t.Errorf("%s: sllbrd show services:\n%s", p.Name, out)
		}
		var x admin.Explanation
		js := e.k("exec", p.Name, "--", "/sllbrd", "explain", f.Proto, f.Src.String(), f.Dst.String(), "-o", "json")
		if err := json.Unmarshal([]byte(js), &x); err != nil {
			e.t.Fatalf("%s: explain: %v: %s", p.Name, err, js)
		}
		if x.Endpoint == nil || addrOf[x.Endpoint.Address] != base[f] {
			e.t.Errorf("%s: explain %s chose %+v, the flow reached %s", p.Name, f, x.Endpoint, base[f])
			continue
		}
		e.t.Logf("kubectl exec %s -- /sllbrd explain %s %s %s: %s, endpoint %d (%v, %s)", p.Name, f.Proto, f.Src, f.Dst,
			x.Verdict, x.Endpoint.ID, x.Endpoint.Address, addrOf[x.Endpoint.Address])
		// SCTP: the kernel here has no SCTP sockets, so no SCTP traffic;
		// the route is programmed and decides like the others.
		for _, dst := range []string{netip.AddrPortFrom(vip4, sctpPort).String(), netip.AddrPortFrom(vip6, sctpPort).String()} {
			src := lab.ClientAddrs().V4.Addr().String() + ":30000"
			if strings.HasPrefix(dst, "[") {
				src = "[" + lab.ClientAddrs().V6.Addr().String() + "]:30000"
			}
			var s admin.Explanation
			js := e.k("exec", p.Name, "--", "/sllbrd", "explain", "sctp", src, dst, "-o", "json")
			if err := json.Unmarshal([]byte(js), &s); err != nil {
				e.t.Fatalf("%s: explain: %v: %s", p.Name, err, js)
			}
			if s.Verdict != "accept" || s.Route == nil || s.Route.Name != ns+"/vips-sctp-6000" || s.Endpoint == nil || addrOf[s.Endpoint.Address] == "" {
				e.t.Errorf("%s: explain sctp %s %s: %s", p.Name, src, dst, js)
			}
		}
	}
}
