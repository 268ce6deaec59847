package onnode

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sllbrd/sllbrd/internal/admin"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// flowSet is one protocol and port of the traffic phase.
type flowSet struct {
	proto string
	port  uint16
	base  uint16 // first source port: the same flows every run
}

var flowSets = []flowSet{{"tcp", flowPort, 21000}, {"udp", udpPort, 22000}}

// flowsPerSet is how many flows each set sends per VIP: with 3 targets
// each gets one with probability 1 - 3*(2/3)^60, about 1 - 1e-10.
const flowsPerSet = 60

// runFlows sends the flows of a set to vip and returns who answered each;
// every flow must be answered.
func (e *env) runFlows(vip netip.Addr, s flowSet, count int) map[lab.Flow]string {
	e.t.Helper()
	got, err := e.lab.Flows(e.ctx, lab.FlowOptions{VIP: vip, Port: s.port, Proto: s.proto, Count: count, SrcPortBase: s.base})
	if err != nil {
		e.t.Fatalf("%s flows to %v: %v", s.proto, vip, err)
	}
	if len(got) != count {
		e.t.Fatalf("%s flows to %v: %d of %d answered", s.proto, vip, len(got), count)
	}
	return got
}

// trafficBothFamilies: flows of both protocols to both VIPs from the client,
// through BIRD's ECMP over the SLLBR pods, are all answered, use every
// application pod, and the same flows again reach the same pods. It
// returns the first run's answers.
func (e *env) trafficBothFamilies() map[lab.Flow]string {
	pods := e.pods(appSelector)
	e.waitTables("traffic", pods)
	start := time.Now()
	apps := podNames(pods)
	all := map[lab.Flow]string{}
	for _, vip := range vips {
		for _, s := range flowSets {
			first := e.runFlows(vip, s, flowsPerSet)
			dist := lab.Distribution(first)
			e.t.Logf("%d %s flows to %v: %v", flowsPerSet, s.proto, vip, dist)
			if !slices.Equal(slices.Sorted(maps.Keys(dist)), apps) {
				e.t.Errorf("%s flows to %v reached %v, want every application pod %v", s.proto, vip, dist, apps)
			}
			again := e.runFlows(vip, s, flowsPerSet)
			if moved := movedFlows(first, again); len(moved) > 0 {
				e.t.Errorf("%s flows to %v: %d of %d reached another pod the second time: %v", s.proto, vip, len(moved), flowsPerSet, moved)
			}
			maps.Copy(all, first)
		}
	}
	e.record(fmt.Sprintf("traffic: %d flows, both families, TCP and UDP, twice", len(all)), time.Since(start))
	return all
}

// movedFlows lists the flows of after that another target answered than in
// before.
func movedFlows(before, after map[lab.Flow]string) []string {
	var out []string
	for f, t := range after {
		if b, ok := before[f]; ok && b != t {
			out = append(out, fmt.Sprintf("%s: %s -> %s", f, b, t))
		}
	}
	slices.Sort(out)
	return out
}

// waitTables waits until every SLLBR pod's hot path (sllbrd show services,
// through kubectl exec) hashes service-a over exactly the addresses of the
// application pods apps, both families. The API, the pods' statuses and
// BIRD's routes say a pod is in before an SLLBR's apply puts it in its
// tables (or takes it out), and a TCP handshake that straddles that apply
// moves between its SYN and its ACK and is reset.
func (e *env) waitTables(what string, apps []corev1.Pod) {
	e.t.Helper()
	want := map[netip.Addr]bool{}
	for _, p := range apps {
		for _, a := range podAddrs(p, "net1") {
			want[a] = true
		}
	}
	e.waitFor(time.Minute, fmt.Sprintf("%s: every SLLBR hashes service-a over %v", what, podNames(apps)), func() (bool, string) {
		for _, lb := range e.pods(sllbrSelector) {
			js, err := e.tryRun(e.kubectl, "exec", lb.Name, "--", "/sllbrd", "show", "services", "-o", "json")
			if err != nil {
				return false, err.Error()
			}
			var svcs admin.Services
			if err := json.Unmarshal([]byte(js), &svcs); err != nil {
				return false, fmt.Sprintf("%s: show services: %v", lb.Name, err)
			}
			got := map[netip.Addr]bool{}
			for _, svc := range svcs.Services {
				if svc.Name != "service-a" {
					continue
				}
				for _, ep := range svc.Endpoints {
					for _, a := range []*admin.EndpointAddress{ep.IPv4, ep.IPv6} {
						if a != nil && a.Ready && a.Entries > 0 {
							got[a.Address] = true
						}
					}
				}
			}
			if !maps.Equal(got, want) {
				return false, fmt.Sprintf("%s hashes over %v, want %v", lb.Name, slices.SortedFunc(maps.Keys(got), netip.Addr.Compare), slices.SortedFunc(maps.Keys(want), netip.Addr.Compare))
			}
		}
		return true, ""
	})
}
