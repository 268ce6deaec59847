package onnode

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/node"
	"github.com/sllbrd/sllbrd/kube"
)

// The node daemon of deploy/target-node.
const daemonName = "sllbrd-target-node"

var daemonSelector = map[string]string{"app.kubernetes.io/name": daemonName}

// nodeAgent is what the node daemon of this node writes as the agent of a
// pod's status.
const nodeAgent = "node/" + node.Name

// daemonOverlay writes a kustomization of the component deploy/target-node
// (more: further components, e.g. its cleanup) in the deploy/ namespace
// with this run's image. What it changes besides is this node's: its
// containerd socket and the directory where containerd mounts the pods'
// network namespaces (the paths CRI reports), mounted at the same path.
func (e *env) daemonOverlay(dir string, more ...string) string {
	dirs := e.node.Dirs()
	components := "components:\n- " + e.relTo(dir, "deploy/target-node") + "\n"
	for _, c := range more {
		components += "- " + e.relTo(dir, c) + "\n"
	}
	runtimeDir := filepath.Dir(dirs.ContainerdSocket())
	return e.writeFile(dir+"/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"+
		"namespace: "+ns+"\n"+components+e.imageOverride()+
		"patches:\n- target: {kind: DaemonSet, name: "+daemonName+"}\n  patch: |-\n"+
		"    - {op: replace, path: /spec/template/spec/containers/0/args/2, value: \"--runtime-endpoint=unix://"+dirs.ContainerdSocket()+"\"}\n"+
		"    - {op: replace, path: /spec/template/spec/volumes/0/hostPath/path, value: "+runtimeDir+"}\n"+
		"    - {op: replace, path: /spec/template/spec/containers/0/volumeMounts/0/mountPath, value: "+runtimeDir+"}\n"+
		"    - {op: replace, path: /spec/template/spec/volumes/1/hostPath/path, value: "+dirs.NetNSDir()+"}\n"+
		"    - {op: add, path: /spec/template/spec/containers/0/volumeMounts/-, value: {name: netns, mountPath: "+dirs.NetNSDir()+", readOnly: true, mountPropagation: HostToContainer}}\n")
}

// relTo is the repository path p relative to the test's directory dir.
func (e *env) relTo(dir, p string) string {
	e.t.Helper()
	rel, err := filepath.Rel(filepath.Join(e.dir, dir), filepath.Join(e.repo, p))
	if err != nil {
		e.t.Fatal(err)
	}
	return rel
}

// daemonReady reports whether the DaemonSet runs its current template,
// ready, on the node.
func (e *env) daemonReady() (bool, string) {
	ds, err := e.kube.AppsV1().DaemonSets(ns).Get(e.ctx, daemonName, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	s := ds.Status
	ok := s.ObservedGeneration >= ds.Generation && s.DesiredNumberScheduled == 1 && s.UpdatedNumberScheduled == 1 &&
		s.NumberReady == 1 && s.NumberAvailable == 1 && len(e.pods(daemonSelector)) == 1
	return ok, fmt.Sprintf("DaemonSet status %+v, pods %v", s, podNames(e.pods(daemonSelector)))
}

// phaseNodeDaemonInstalled applies the component deploy/target-node: the
// daemon becomes Ready with exactly its documented privileges, and touches
// none of the sidecar pods (their status still names the sidecar).
func (e *env) phaseNodeDaemonInstalled() {
	start := time.Now()
	overlay := e.daemonOverlay("node-daemon")
	e.t.Logf("kubectl apply -k of the component deploy/target-node for this node:\n%s", readFile(e.t, overlay))
	e.k("apply", "-k", filepath.Dir(overlay))
	e.waitFor(2*time.Minute, "the node daemon Ready", e.daemonReady)
	e.record("node daemon (deploy/target-node) Ready", time.Since(start))
	d := e.pods(daemonSelector)[0]
	const sysAdmin, netAdmin = 1 << 21, 1 << 12
	pid := e.checkCaps(d, "sllbrd-target", sysAdmin|netAdmin)
	if own, host := readLink(e, fmt.Sprintf("/proc/%d/ns/net", pid)), readLink(e, "/proc/self/ns/net"); own == host {
		e.t.Errorf("the node daemon runs in the host's network namespace %s", host)
	}
	if d.Spec.HostNetwork || d.Spec.HostPID || d.Spec.HostIPC {
		e.t.Errorf("the node daemon's pod shares a host namespace: %+v", d.Spec)
	}
	time.Sleep(2 * time.Second) // a daemon that wrongly takes sidecar pods has done so by now
	if ok, why := e.targetsConfigured(e.pods(appSelector), 2); !ok {
		e.t.Errorf("the sidecar pods after the node daemon came: %s", why)
	}
}

// phaseMoveToNodeDaemon applies deploy/examples/node-daemon/target-application.yaml
// over the sidecar example under load: a rolling update moves every pod to
// the node daemon. A new pod is an endpoint only once the daemon applied
// its configuration, so no flow is sent to a pod without its VIPs.
func (e *env) phaseMoveToNodeDaemon() {
	ld := e.startLoad()
	start := time.Now()
	overlay := e.appOverlay("app-node", "node-daemon/target-application.yaml")
	e.k("apply", "-k", filepath.Dir(overlay))
	e.waitFor(3*time.Minute, "the application rolled out without sidecar", func() (bool, string) {
		if ok, why := e.deploymentReady(appName); !ok {
			return false, why
		}
		pods := e.pods(appSelector)
		for _, p := range pods {
			if p.Annotations[kube.AnnotationTargetAgent] != "" || len(p.Spec.Containers) != 1 {
				return false, p.Name + " is a sidecar pod"
			}
		}
		return len(pods) == 3, fmt.Sprint(podNames(pods))
	})
	e.waitFor(time.Minute, "the node daemon configured every application pod", func() (bool, string) {
		return e.targetsConfigured(e.pods(appSelector), 2)
	})
	e.record("application moved to the node daemon (rolling update)", time.Since(start))
	r := ld.stop()
	e.t.Logf("moving to the node daemon: %v", r)
	e.records = append(e.records, "  moving to the node daemon: "+r.String())
	if r.lost > 0 {
		e.t.Errorf("%d UDP flows lost while pods moved to the node daemon", r.lost)
	}
	for _, p := range e.pods(appSelector) {
		e.checkCaps(p, "application", 0)
		if len(p.Spec.Volumes) > 0 && slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Projected != nil }) {
			e.t.Errorf("%s: the node-mode application holds a ServiceAccount token", p.Name)
		}
	}
	e.trafficBothFamilies()
}

// phaseDaemonRestarted deletes the daemon's pod under load: nothing is
// lost, and the new daemon rewrites no pod's status.
func (e *env) phaseDaemonRestarted() {
	before := e.statuses()
	old := podNames(e.pods(daemonSelector))
	ld := e.startLoad()
	start := time.Now()
	e.k("delete", "pod", "-l", "app.kubernetes.io/name="+daemonName, "--wait=true")
	e.waitFor(2*time.Minute, "a new node daemon Ready", func() (bool, string) {
		if ok, why := e.daemonReady(); !ok {
			return false, why
		}
		return !slices.Equal(podNames(e.pods(daemonSelector)), old), "still " + strings.Join(old, " ")
	})
	e.record("node daemon deleted until its replacement is Ready", time.Since(start))
	time.Sleep(3 * time.Second) // the new daemon's first applies and status writes
	r := ld.stop()
	e.t.Logf("node daemon restarted: %v", r)
	e.records = append(e.records, "  node daemon restarted: "+r.String())
	if r.lost > 0 || len(r.broken) > 0 {
		e.t.Errorf("the node daemon's restart cost traffic: %v %v", r, r.broken)
	}
	if after := e.statuses(); !maps.Equal(before, after) {
		e.t.Errorf("the restarted daemon rewrote statuses:\nbefore %v\nafter  %v", before, after)
	}
}

// phaseCreatedWhileDaemonAway: with the daemon away (its DaemonSet selects
// no node), a new application pod gets Ready but is no ready endpoint and
// no flow reaches it; once the daemon is back it is configured and flows
// reach it.
func (e *env) phaseCreatedWhileDaemonAway() {
	e.k("patch", "daemonset", daemonName, "--type=merge", "-p", `{"spec":{"template":{"spec":{"nodeSelector":{"sllbrd.test/no-such-node":"true"}}}}}`)
	e.waitFor(time.Minute, "the node daemon gone", func() (bool, string) {
		pods := e.pods(daemonSelector)
		return len(pods) == 0, fmt.Sprint(podNames(pods))
	})
	old := podNames(e.pods(appSelector))
	e.k("scale", "deployment", appName, "--replicas=4")
	var fresh string
	e.waitFor(2*time.Minute, "a fourth application pod Ready", func() (bool, string) {
		for _, p := range e.pods(appSelector) {
			if !slices.Contains(old, p.Name) && podReadyCondition(p) {
				fresh = p.Name
				return true, ""
			}
		}
		return false, "not yet"
	})
	start := time.Now()
	time.Sleep(2 * time.Second) // what a controller that trusts the Ready condition would have done by now
	if ready, listed := e.endpointReady(fresh); !listed || ready {
		e.t.Errorf("%s, Ready without its VIPs: listed %v, ready %v in service-a's slices; want listed not ready", fresh, listed, ready)
	}
	for _, vip := range vips {
		for _, s := range flowSets {
			for f, to := range e.runFlows(vip, s, flowsPerSet) {
				if to == fresh {
					e.t.Errorf("flow %s reached %s before its VIPs were applied", f, fresh)
				}
			}
		}
	}
	e.k("patch", "daemonset", daemonName, "--type=json", "-p", `[{"op":"remove","path":"/spec/template/spec/nodeSelector"}]`)
	e.waitFor(2*time.Minute, "the node daemon back", e.daemonReady)
	e.waitFor(time.Minute, "the node daemon configured the pod created while it was away", func() (bool, string) {
		return e.targetsConfigured(e.pods(appSelector), 2)
	})
	e.waitFor(time.Minute, "the fourth pod a ready endpoint", func() (bool, string) {
		ready, _ := e.endpointReady(fresh)
		return ready, "not ready"
	})
	e.record("node daemon back: the pod created meanwhile configured", time.Since(start))
	e.waitTables("the fourth pod", e.pods(appSelector))
	got := e.runFlows(vips[0], flowSets[0], flowsPerSet)
	if dist := lab.Distribution(got); dist[fresh] == 0 {
		e.t.Errorf("no flow reaches %s once configured: %v", fresh, dist)
	}
	e.k("scale", "deployment", appName, "--replicas=3")
	e.waitFor(2*time.Minute, "back to 3 application pods", func() (bool, string) {
		if ok, why := e.deploymentReady(appName); !ok {
			return false, why
		}
		return len(e.pods(appSelector)) == 3, fmt.Sprint(podNames(e.pods(appSelector)))
	})
}

// phaseDaemonFootprint reads the daemon's working set and CPU at rest.
func (e *env) phaseDaemonFootprint() {
	time.Sleep(20 * time.Second)
	var row footprintRow
	e.waitFor(time.Minute, "the summary API has the node daemon's figures", func() (bool, string) {
		rows, why := e.summaryRows()
		for _, r := range rows {
			if strings.HasPrefix(r.pod, daemonName+"-") {
				row = r
				return true, ""
			}
		}
		return false, why
	})
	line := fmt.Sprintf("node daemon at rest: working set %.1f MiB, CPU %.1f m (seed's Network Daemon: 10Mi, 1m); 3 pods configured",
		float64(row.workingSet)/(1<<20), row.milliCores)
	e.t.Log(line)
	e.records = append(e.records, line)
	if row.workingSet == 0 {
		e.t.Errorf("the node daemon's working set is 0")
	}
}

// phaseDaemonCleanup is the documented uninstall: the cleanup component
// makes the daemon remove everything it put into the pods of its node and
// its status annotations; then the component is deleted.
func (e *env) phaseDaemonCleanup() {
	start := time.Now()
	overlay := e.daemonOverlay("node-daemon-cleanup", "deploy/target-node/cleanup")
	e.k("apply", "-k", filepath.Dir(overlay))
	e.waitFor(2*time.Minute, "the cleanup daemon Ready", e.daemonReady)
	e.waitFor(time.Minute, "nothing of ours left in the application pods", func() (bool, string) {
		for _, p := range e.pods(appSelector) {
			if v, ok := p.Annotations[kube.AnnotationTargetNetworkStatus]; ok {
				return false, p.Name + " still has a status: " + v
			}
			pid := fmt.Sprint(e.containerPID(p, "application"))
			lo, err := e.tryRun("nsenter", "-t", pid, "-n", "ip", "addr", "show", "dev", "lo")
			if err != nil || strings.Contains(lo, vip4.String()) || strings.Contains(lo, vip6.String()) {
				return false, fmt.Sprintf("%s: lo has %s %v", p.Name, lo, err)
			}
			for _, family := range []string{"-4", "-6"} {
				rules, err := e.tryRun("nsenter", "-t", pid, "-n", "ip", family, "rule", "show")
				if err != nil || strings.Contains(rules, "10200:") || strings.Contains(rules, "10201:") {
					return false, fmt.Sprintf("%s: rules %s %v", p.Name, rules, err)
				}
			}
		}
		return true, ""
	})
	e.record("uninstall: the cleanup daemon removed every VIP, rule and status", time.Since(start))
	e.k("delete", "-k", filepath.Dir(overlay), "--wait=true", "--timeout=2m")
}

// appOverlay writes a kustomization of deploy/examples/<file> with the
// lab's responder as the application container, answering on the VIPs with
// its pod's name.
func (e *env) appOverlay(dir, file string) string {
	e.writeFile(dir+"/"+file, readFile(e.t, filepath.Join(e.repo, "deploy", "examples", file)))
	// -drain: it serves on for 2 s after SIGTERM, while its endpoint is
	// removed, as an application should.
	args := fmt.Sprintf(`["-addr", "%s,%s", "-tcp", "%d", "-echo", "%d", "-udp", "%d", "-drain", "2s"]`, vip4, vip6, flowPort, echoPort, udpPort)
	return e.writeFile(dir+"/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"+
		"resources:\n- "+file+"\n"+e.imageOverride()+
		"patches:\n- target: {kind: Deployment, name: "+appName+"}\n  patch: |-\n"+
		"    - {op: replace, path: /spec/template/spec/containers/0/image, value: "+e.images.responder.Ref+"}\n"+
		"    - {op: add, path: /spec/template/spec/containers/0/args, value: "+args+"}\n"+
		"    - {op: add, path: /spec/template/spec/containers/0/env, value: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]}\n")
}

// statuses returns every application pod's status annotation.
func (e *env) statuses() map[string]string {
	out := map[string]string{}
	for _, p := range e.pods(appSelector) {
		out[p.Name] = p.Annotations[kube.AnnotationTargetNetworkStatus]
	}
	return out
}

// endpointReady reports whether service-a's slices list the pod, and
// whether every entry of it is ready.
func (e *env) endpointReady(pod string) (ready, listed bool) {
	e.t.Helper()
	list, err := e.kube.DiscoveryV1().EndpointSlices(ns).List(e.ctx, metav1.ListOptions{LabelSelector: ourSlices + ",kubernetes.io/service-name=service-a"})
	if err != nil {
		e.t.Fatal(err)
	}
	ready = true
	for _, s := range list.Items {
		for _, ep := range s.Endpoints {
			if ep.TargetRef != nil && ep.TargetRef.Name == pod {
				listed = true
				ready = ready && ep.Conditions.Ready != nil && *ep.Conditions.Ready
			}
		}
	}
	return ready && listed, listed
}

func podReadyCondition(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func readLink(e *env, p string) string {
	e.t.Helper()
	s, err := os.Readlink(p)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}
