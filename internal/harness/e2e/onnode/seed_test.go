package onnode

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
)

// seedFiles are the seed's objects of deploy/examples the user applies
// (endpointslice.yaml is for `sllbrd --manifests` only; the application
// comes later).
var seedFiles = []string{"gatewayclass.yaml", "sllbrconfig.yaml", "gateway.yaml", "service.yaml", "l34route.yaml", "gatewayrouter.yaml"}

// moreRoute is an L34Route of the seed's VIPs (both families) for one
// protocol and port: the test adds UDP and SCTP routes to the seed's TCP
// ones.
func moreRoute(proto string, port int) string {
	return fmt.Sprintf(`apiVersion: meridio.experiment.gateway.api.poc/v1alpha1
kind: L34Route
metadata:
  name: vips-%[1]s-%[2]d
spec:
  parentRefs: [{name: sllb-a}]
  backendRefs: [{name: service-a, port: 1}]
  priority: 10
  destinationCIDRs: [20.0.0.1/32, "2001:db8::1/128"]
  sourcePorts: [0-65535]
  destinationPorts: ["%[2]d"]
  protocols: [%[3]s]
`, strings.ToLower(proto), port, proto)
}

// applySeed applies the seed's objects, unchanged, and the extra routes;
// it returns once the controller's SLLBR Deployment is Available.
func (e *env) applySeed() {
	start := time.Now()
	args := []string{"apply"}
	for _, f := range seedFiles {
		args = append(args, "-f", filepath.Join(e.repo, "deploy", "examples", f))
	}
	e.k(append(args, "-f", e.writeFile("routes.yaml", moreRoute("UDP", udpPort)+"---\n"+moreRoute("SCTP", sctpPort)))...)
	e.waitFor(3*time.Minute, "the SLLBR Deployment Available", func() (bool, string) { return e.deploymentReady(sllbrName) })
	e.record("seed objects applied: SLLBR pods Ready", time.Since(start))
	pods := e.pods(sllbrSelector)
	if len(pods) != 2 {
		e.t.Fatalf("%d SLLBR pods, want the 2 replicas of the SLLBRConfig", len(pods))
	}
	for _, p := range pods {
		e.checkSLLBRPrivileges(p)
	}
	// No VIP is announced yet: sllbrd announces a VIP once it has a ready
	// endpoint (the application comes next).
	e.waitFor(time.Minute, "BIRD: BGP Established and BFD Up with every SLLBR pod", func() (bool, string) {
		return e.birdSees(pods, false)
	})
	e.record("BIRD: BGP Established and BFD Up with both SLLBR pods", time.Since(start))
	e.waitFor(time.Minute, "every L34Route and GatewayRouter Accepted", e.routesAccepted)
}

// routesAccepted reports whether the controller accepted every L34Route
// (TCP, UDP and SCTP, both families) for the Gateway, and every
// GatewayRouter.
func (e *env) routesAccepted() (bool, string) {
	for _, kind := range []string{"l34routes", "gatewayrouters"} {
		list, err := e.dyn.Dynamic.Resource(v1alpha1.SchemeGroupVersion.WithResource(kind)).Namespace(ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		want := map[string]int{"l34routes": 4, "gatewayrouters": 2}[kind]
		if len(list.Items) != want {
			return false, fmt.Sprintf("%d %s, want %d", len(list.Items), kind, want)
		}
		for _, o := range list.Items {
			// L34Routes report per parent (status.parents[].conditions),
			// GatewayRouters on themselves (status.conditions).
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			if kind == "l34routes" {
				parents, _, _ := unstructured.NestedSlice(o.Object, "status", "parents")
				conds = nil
				for _, p := range parents {
					c, _, _ := unstructured.NestedSlice(p.(map[string]any), "conditions")
					conds = append(conds, c...)
				}
			}
			if !conditionTrue(conds, "Accepted") {
				return false, fmt.Sprintf("%s %s: %v", kind, o.GetName(), conds)
			}
		}
	}
	return true, ""
}

func conditionTrue(conds []any, typ string) bool {
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

// networkStatus is one entry of Multus's network-status annotation.
type networkStatus struct {
	Name      string   `json:"name"`
	Interface string   `json:"interface"`
	IPs       []string `json:"ips"`
	Default   bool     `json:"default"`
}

// podAddrs returns a pod's addresses on interface ifname from its
// network-status annotation.
func podAddrs(p corev1.Pod, ifname string) []netip.Addr {
	var st []networkStatus
	_ = json.Unmarshal([]byte(p.Annotations[kube.AnnotationNetworkStatus]), &st) // empty: none
	var out []netip.Addr
	for _, s := range st {
		if s.Interface != ifname {
			continue
		}
		for _, ip := range s.IPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				out = append(out, a)
			}
		}
	}
	return out
}

// birdSeesAll reports whether BIRD has an Established BGP session and an Up
// BFD session with every pod's vlan-100 addresses, and routes each VIP via
// all of them.
func (e *env) birdSeesAll(pods []corev1.Pod) (bool, string) { return e.birdSees(pods, true) }

// birdSees is birdSeesAll, the routes checked only when withRoutes.
func (e *env) birdSees(pods []corev1.Pod, withRoutes bool) (bool, string) {
	var want []netip.Addr
	for _, p := range pods {
		addrs := podAddrs(p, lab.GatewayLink)
		if len(addrs) != 2 {
			return false, fmt.Sprintf("pod %s has addresses %v on %s", p.Name, addrs, lab.GatewayLink)
		}
		want = append(want, addrs...)
	}
	protos, err := e.bird.Birdc(e.ctx, "show", "protocols")
	if err != nil {
		return false, err.Error()
	}
	bfd, err := e.bird.Birdc(e.ctx, "show", "bfd", "sessions")
	if err != nil {
		return false, err.Error()
	}
	for _, a := range want {
		if !lineHas(protos, lab.BIRDProtocolName(a), "Established") {
			return false, "BGP with " + a.String() + " is not Established:\n" + protos
		}
		if !lineHas(bfd, a.String(), "Up") {
			return false, "BFD with " + a.String() + " is not Up:\n" + bfd
		}
	}
	for _, v := range vips {
		if !withRoutes {
			break
		}
		var hops []netip.Addr
		for _, a := range want {
			if a.Is4() == v.Is4() {
				hops = append(hops, a)
			}
		}
		if got := e.gatewayVia(v); !sameAddrs(got, hops) {
			return false, fmt.Sprintf("the gateway routes %v via %v, want %v", v, got, hops)
		}
	}
	return true, ""
}

// lineHas reports whether a line of text has every word.
func lineHas(text string, words ...string) bool {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		ok := true
		for _, w := range words {
			ok = ok && slices.Contains(f, w)
		}
		if ok {
			return true
		}
	}
	return false
}

// gatewayVia returns the next hops of the gateway's route to vip.
func (e *env) gatewayVia(vip netip.Addr) []netip.Addr {
	fam := "-4"
	if vip.Is6() {
		fam = "-6"
	}
	out, err := e.lab.Exec(e.ctx, lab.GatewayNode, "ip", fam, "route", "show", netip.PrefixFrom(vip, vip.BitLen()).String())
	if err != nil {
		return nil
	}
	var hops []netip.Addr
	f := strings.Fields(out)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "via" {
			if a, err := netip.ParseAddr(f[i+1]); err == nil {
				hops = append(hops, a)
			}
		}
	}
	return hops
}

func sameAddrs(a, b []netip.Addr) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, netip.Addr.Compare)
	slices.SortFunc(b, netip.Addr.Compare)
	return slices.Equal(a, b)
}

// The capabilities docs/deploy.md documents for the sllbrd container:
// NET_BIND_SERVICE (10), NET_ADMIN (12) and NET_RAW (13).
const sllbrdCaps = 1<<10 | 1<<12 | 1<<13

// checkSLLBRPrivileges checks a running SLLBR pod against docs/deploy.md:
// in its spec (no privileged, no host namespaces or paths) and in the
// kernel's view of its sllbrd process (exactly the three capabilities,
// no_new_privs, seccomp, a read-only root, the sysctls in its own network
// namespace).
func (e *env) checkSLLBRPrivileges(p corev1.Pod) {
	e.t.Helper()
	s := p.Spec
	if s.HostNetwork || s.HostPID || s.HostIPC {
		e.t.Errorf("%s shares a host namespace", p.Name)
	}
	for _, v := range s.Volumes {
		if v.HostPath != nil {
			e.t.Errorf("%s mounts the host path %s", p.Name, v.HostPath.Path)
		}
	}
	if len(s.Containers) != 1 || len(s.InitContainers) != 0 {
		e.t.Fatalf("%s has containers %d and init containers %d, want one sllbrd", p.Name, len(s.Containers), len(s.InitContainers))
	}
	c := s.Containers[0]
	if sc := c.SecurityContext; sc == nil || (sc.Privileged != nil && *sc.Privileged) {
		e.t.Errorf("%s: container security context %+v", p.Name, sc)
	}
	if c.Image != e.images.sllbrd.Ref {
		e.t.Errorf("%s runs %s, want the image of this run %s", p.Name, c.Image, e.images.sllbrd.Ref)
	}
	pid := e.checkCaps(p, c.Name, sllbrdCaps)
	if root := rootMountOptions(e.t, pid); !slices.Contains(root, "ro") {
		e.t.Errorf("%s: the root file system is mounted %v, want read-only", p.Name, root)
	}
	for key, want := range map[string]string{
		"net.ipv4.ip_forward": "1", "net.ipv6.conf.all.forwarding": "1", "net.ipv4.fib_multipath_hash_policy": "1",
		"net.ipv4.conf.all.rp_filter": "2", "net.ipv4.fwmark_reflect": "1",
	} {
		// /proc/sys/net shows the reader's network namespace.
		got := strings.TrimSpace(e.run("nsenter", "-t", strconv.Itoa(pid), "-n", "cat", "/proc/sys/"+strings.ReplaceAll(key, ".", "/")))
		if got != want {
			e.t.Errorf("%s: %s = %s in the pod, want %s", p.Name, key, got, want)
		}
	}
}

// checkCaps checks, in the kernel's view of a container's main process,
// its capabilities (effective, permitted and bounding: exactly caps; no
// ambient), no_new_privs and the RuntimeDefault seccomp filter, and
// returns its PID.
func (e *env) checkCaps(p corev1.Pod, container string, caps uint64) int {
	e.t.Helper()
	pid := e.containerPID(p, container)
	status := readFile(e.t, fmt.Sprintf("/proc/%d/status", pid))
	for field, want := range map[string]uint64{"CapEff": caps, "CapPrm": caps, "CapBnd": caps, "CapAmb": 0, "NoNewPrivs": 1, "Seccomp": 2} {
		got, err := statusField(status, field)
		if err != nil || got != want {
			e.t.Errorf("%s/%s: %s is %#x (%v), want %#x", p.Name, container, field, got, err, want)
		}
	}
	return pid
}

// containerPID is the host PID of a pod's running container.
func (e *env) containerPID(p corev1.Pod, container string) int {
	e.t.Helper()
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container {
			pid, err := e.node.ContainerPID(e.ctx, cs.ContainerID)
			if err != nil {
				e.t.Fatalf("%s/%s: %v", p.Name, container, err)
			}
			return pid
		}
	}
	e.t.Fatalf("%s has no status of container %s", p.Name, container)
	return 0
}

// statusField parses a hexadecimal (Cap*) or decimal field of
// /proc/PID/status.
func statusField(status, field string) (uint64, error) {
	for _, line := range strings.Split(status, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != field {
			continue
		}
		base := 10
		if strings.HasPrefix(field, "Cap") {
			base = 16
		}
		return strconv.ParseUint(strings.TrimSpace(v), base, 64)
	}
	return 0, fmt.Errorf("no %s", field)
}

// rootMountOptions returns the mount options of a process's root.
func rootMountOptions(t interface{ Fatal(...any) }, pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			return strings.Split(f[5], ",")
		}
	}
	return nil
}
