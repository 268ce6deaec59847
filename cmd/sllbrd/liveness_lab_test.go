package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/admin"
	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// The liveness configuration of the lab's Services: the default, which
// these tests measure (docs/liveness.md).
const (
	labInterval  = 200 * time.Millisecond
	labDetection = 4 * labInterval
	labHoldDown  = 5 * time.Second
)

// livenessFault breaks and restores one target's network.
type livenessFault struct {
	name           string
	apply, restore func(t *testing.T, l *lab.Lab, target string)
}

// linkDown sets the switch port of the target down, as a broken cable or a
// dead node: the target keeps its addresses and routes for when it is back.
var linkDown = livenessFault{name: "link down",
	apply: func(t *testing.T, l *lab.Lab, tg string) {
		exec1(t, l, lab.SwitchNode, "ip", "link", "set", tg+"-"+lab.TargetLink, "down")
	},
	restore: func(t *testing.T, l *lab.Lab, tg string) {
		exec1(t, l, lab.SwitchNode, "ip", "link", "set", tg+"-"+lab.TargetLink, "up")
	},
}

// labDropTable is the nftables table a fault adds in a target.
const labDropTable = "sllbrd_lab_liveness_drop"

// dropAll makes the target's namespace drop everything it receives on its
// network (nftables netdev ingress, before anything else sees a packet).
var dropAll = livenessFault{name: "namespace drops everything",
	apply: func(t *testing.T, l *lab.Lab, tg string) {
		dropIngress(t, l, tg, "")
	},
	restore: func(t *testing.T, l *lab.Lab, tg string) {
		exec1(t, l, tg, "nft", "delete", "table", "netdev", labDropTable)
	},
}

// dropIngress adds the drop table to target: every frame on its target
// network, or only those matching match (an nftables expression).
func dropIngress(t *testing.T, l *lab.Lab, target, match string) {
	t.Helper()
	script := fmt.Sprintf("table netdev %s {\n chain in {\n  type filter hook ingress device %s priority -500; policy accept;\n  %s drop\n }\n}\n",
		labDropTable, lab.TargetLink, match)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := l.ExecInput(ctx, target, script, "nft", "-f", "-"); err != nil {
		t.Fatalf("%s: nft: %v: %s", target, err, out)
	}
	t.Cleanup(func() { _, _ = l.Exec(context.Background(), target, "nft", "delete", "table", "netdev", labDropTable) })
}

// TestIntegrationLivenessTargetLinkDown: one SLLBR, three targets, the
// default liveness checks, both families: when a target's link goes down,
// its new flows go to other targets within the detection time, each to the
// target sllbrd explain names, and no other flow moves; when it is back,
// its flows return to it after the hold-down. Measured and reported.
func TestIntegrationLivenessTargetLinkDown(t *testing.T) {
	forEachDataplane(t, func(t *testing.T, mode string) { testTargetDies(t, mode, linkDown) })
}

// TestIntegrationLivenessTargetDropsEverything: the same with a target whose
// namespace drops everything.
func TestIntegrationLivenessTargetDropsEverything(t *testing.T) {
	testTargetDies(t, dataplaneKernel, dropAll)
}

func testTargetDies(t *testing.T, mode string, fault livenessFault) {
	l := dataplaneLab(t, 1, mode)
	_, insts := startSllbrd(t, l, allTargets, webRoute, 1)
	inst := insts[0]
	waitAlive(t, inst, "t2", true)
	served := baselineFlows(t, l, 41000)
	s := startStream(t, l, streamFlowsOf(served, "t2", 12), 5000)
	time.Sleep(300 * time.Millisecond) // every flow answered before the fault

	faultAt := time.Now()
	fault.apply(t, l, "t2")
	faultTook := time.Since(faultAt)
	tls := waitTimelines(t, s, "t2", faultAt, time.Time{}, 5*time.Second, func(tl timeline) bool { return !tl.allMoved.IsZero() })
	checkExplained(t, inst, s, tls)
	checkShowsDead(t, inst, "t2")
	time.Sleep(time.Second) // the moved flows stay where they are

	restoredAt := time.Now()
	fault.restore(t, l, "t2")
	checkReturn(t, s, fmt.Sprintf("%s, %s", fault.name, mode), faultAt, faultTook, restoredAt, 2*time.Second, 0)
	checkEventLogged(t, inst)
}

// checkReturn waits until t2, restored at restoredAt, has answered its
// flows again (a hold-down, at most backSlack more, and 5 s to see it
// fail), stops the stream, and checks and reports both families'
// timelines since the fault and the last answers. Answers from t2 within
// stale of restoredAt are not its return: a target that was frozen answers
// the requests queued while it was (sent before its flows moved) as soon
// as it runs again.
func checkReturn(t *testing.T, s *askStream, what string, faultAt time.Time, faultTook time.Duration, restoredAt time.Time, backSlack, stale time.Duration) {
	t.Helper()
	tls := waitTimelines(t, s, "t2", faultAt, restoredAt.Add(stale), labHoldDown+backSlack+5*time.Second,
		func(tl timeline) bool { return tl.answeredAfter > 2*s.count(true, "t2") })
	// Each SLLBR ends its own hold-down (its BFD session came up at its own
	// time): the flows through the last one come back up to an interval or
	// two after the first. The last answers are judged once every flow has
	// been answered where it started after the restore, or the time is up.
	for end := restoredAt.Add(labHoldDown + backSlack + 5*time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if answers, _ := s.snapshot(); everyFlowHome(s, answers, restoredAt.Add(stale)) {
			break
		}
	}
	s.close()
	answers, errs := s.snapshot()
	defer debugAnswers(t, s, answers, faultAt)
	for _, err := range errs {
		t.Error(err)
	}
	for fam, tl := range tls {
		checkTimeline(t, what+", "+fam, tl, s, faultAt, faultTook, restoredAt, backSlack)
	}
	checkLastAnswers(t, s, answers, "t2")
}

// baselineFlows runs 120 UDP flows of each family from fixed source ports
// and returns where they landed, IPv4 first.
func baselineFlows(t *testing.T, l *lab.Lab, base uint16) []map[lab.Flow]string {
	t.Helper()
	var out []map[lab.Flow]string
	for _, vip := range []netip.Addr{vip4, vip6} {
		out = append(out, flows(t, l, lab.FlowOptions{VIP: vip, Port: 5000, Count: 120, SrcPortBase: base}))
	}
	return out
}

// waitTimelines waits until done holds for both families' timelines, or
// timeout, and returns them by family.
func waitTimelines(t *testing.T, s *askStream, dead string, fault, restored time.Time, timeout time.Duration, done func(timeline) bool) map[string]timeline {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		answers, _ := s.snapshot()
		tls := map[string]timeline{"ipv4": s.analyse(answers, true, dead, fault, restored), "ipv6": s.analyse(answers, false, dead, fault, restored)}
		if done(tls["ipv4"]) && done(tls["ipv6"]) {
			return tls
		}
		if time.Now().After(deadline) {
			t.Logf("waited %v: ipv4 %+v; ipv6 %+v", timeout, tls["ipv4"], tls["ipv6"])
			return tls
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkTimeline checks and reports one family's timeline: the flows
// return a hold-down after the target is restored, and at most backSlack
// more.
func checkTimeline(t *testing.T, what string, tl timeline, s *askStream, faultAt time.Time, faultTook time.Duration, restoredAt time.Time, backSlack time.Duration) {
	t.Helper()
	for _, m := range tl.misrouted {
		t.Errorf("%s: %s", what, m)
	}
	if tl.firstMoved.IsZero() || tl.allMoved.IsZero() {
		t.Errorf("%s: the dead target's flows did not all move: %d of them answered by another target", what, len(tl.movedTo))
		return
	}
	first, all := tl.firstMoved.Sub(faultAt), tl.allMoved.Sub(faultAt)
	t.Logf("%s: fault applied in %v; last answer from t2 %v after the fault; first of its flows rerouted after %v (%.2f × the detection time %v), all %d after %v (%.2f ×)",
		what, faultTook.Round(time.Millisecond), tl.lastOnTarget.Sub(faultAt).Round(time.Millisecond), first.Round(time.Millisecond),
		first.Seconds()/labDetection.Seconds(), labDetection, len(tl.movedTo), all.Round(time.Millisecond), all.Seconds()/labDetection.Seconds())
	// Dead between Detection - Interval and Detection + Interval after the
	// fault (its last reply came up to one interval before), then one
	// apply; the machine is shared and noisy: 1.5 × the latest.
	if low, high := labDetection-labInterval-50*time.Millisecond, (labDetection+labInterval)*3/2; first < low || all > high {
		t.Errorf("%s: rerouted between %v and %v after the fault, want within [%v, %v]", what, first, all, low, high)
	}
	if g := tl.maxGap(); g > 250*time.Millisecond {
		t.Errorf("%s: a rerouted flow went unanswered for %v", what, g)
	} else {
		t.Logf("%s: rerouted flows answered without a gap longer than %v until the target was back", what, g.Round(time.Millisecond))
	}
	if tl.firstBack.IsZero() {
		t.Errorf("%s: no flow returned to t2 after it was restored", what)
		return
	}
	back := tl.firstBack.Sub(restoredAt)
	t.Logf("%s: restored; its flows returned after %v (hold-down %v: %.2f ×), %d answers from it since",
		what, back.Round(time.Millisecond), labHoldDown, back.Seconds()/labHoldDown.Seconds(), tl.answeredAfter)
	if back < labHoldDown-50*time.Millisecond || back > labHoldDown+backSlack {
		t.Errorf("%s: flows returned %v after the target was back, want the hold-down %v (and at most %v more)", what, back, labHoldDown, backSlack)
	}
}

// everyFlowHome reports whether every flow's last answer is from where it
// started and came after since.
func everyFlowHome(s *askStream, answers []answer, since time.Time) bool {
	last := lastAnswers(answers)
	for i, f := range s.flows {
		if a, ok := last[i]; !ok || a.target != f.start || !a.at.After(since) {
			return false
		}
	}
	return true
}

// checkLastAnswers: at the end, every flow is answered by where it started.
func checkLastAnswers(t *testing.T, s *askStream, answers []answer, dead string) {
	t.Helper()
	last := lastAnswers(answers)
	for i, f := range s.flows {
		if last[i].target != f.start {
			t.Errorf("flow from %v port %d: last answered by %q, want %s as at the start", f.vip, f.port, last[i].target, f.start)
		}
	}
}

// lastAnswers returns each flow's last answer, by flow index.
func lastAnswers(answers []answer) map[int]answer {
	last := map[int]answer{}
	for _, a := range answers {
		last[a.flow] = a
	}
	return last
}

// checkExplained: each rerouted flow went to the target `sllbrd explain`
// names, so another SLLBR with the same tables sends it there too; so did
// each flow of a live target that Maglev moved needlessly, and those are
// few and counted.
func checkExplained(t *testing.T, inst *e2e.Instance, s *askStream, tls map[string]timeline) {
	t.Helper()
	for fam, tl := range tls {
		for _, moved := range []map[int]string{tl.movedTo, tl.needless} {
			for i, to := range moved {
				f := s.flows[i]
				if got := explainTarget(t, inst, f.vip, f.port); got != to {
					t.Errorf("flow from port %d to %v: answered by %s, explain says %s", f.port, f.vip, to, got)
				}
			}
		}
		checkNeedless(t, inst, fam, len(tl.needless), len(s.flows)/2-len(tl.movedTo))
	}
}

// checkNeedless checks that n flows of live targets of live moved needlessly
// are few (Maglev's needless moves are a small share of a table's entries,
// docs/liveness.md: 2 flows, or 5 %, is a bound with room), and that the
// entries moved were counted.
func checkNeedless(t *testing.T, inst *e2e.Instance, what string, n, live int) {
	t.Helper()
	needed, _, err := inst.Metric(`sllbrd_liveness_moved_entries_total{kind="needed"}`)
	needless, _, err2 := inst.Metric(`sllbrd_liveness_moved_entries_total{kind="needless"}`)
	if err != nil || err2 != nil || needed == 0 || (n > 0 && needless == 0) {
		t.Errorf("%s: %d flows moved needlessly; moved entries counted: needed %v, needless %v (%v, %v)", what, n, needed, needless, err, err2)
	}
	if n > max(2, live/20) {
		t.Errorf("%s: %d of %d flows of live targets moved", what, n, live)
	}
	if n > 0 {
		t.Logf("%s: %d of %d flows of live targets moved needlessly (Maglev; %s counted %v needless and %v needed entry moves so far)", what, n, live, inst.Node, needless, needed)
	}
}

// explainTarget asks inst where a UDP flow from the client goes.
func explainTarget(t *testing.T, inst *e2e.Instance, vip netip.Addr, port uint16) string {
	t.Helper()
	var x admin.Explanation
	src := netip.AddrPortFrom(lab.ClientAddrs().For(vip), port)
	sllbrdJSON(t, inst.AdminSocket, &x, "explain", "udp", src.String(), netip.AddrPortFrom(vip, 5000).String())
	if x.Endpoint == nil {
		return "(none)"
	}
	return targetOf(x.Endpoint.Address)
}

// showEndpoint returns what sllbrd show services says of target's address
// of each family in service-a.
func showEndpoint(t *testing.T, inst *e2e.Instance, target string) (addrs []*admin.EndpointAddress, svc admin.Service) {
	t.Helper()
	var svcs admin.Services
	sllbrdJSON(t, inst.AdminSocket, &svcs, "show", "services")
	for _, s := range svcs.Services {
		if s.Name != "service-a" {
			continue
		}
		for _, ep := range s.Endpoints {
			for _, a := range []*admin.EndpointAddress{ep.IPv4, ep.IPv6} {
				if a != nil && targetOf(a.Address) == target {
					addrs = append(addrs, a)
				}
			}
		}
		return addrs, s
	}
	t.Fatalf("show services: no service-a: %+v", svcs)
	return nil, admin.Service{}
}

// checkShowsDead: show says the target's addresses are dead and not ready,
// and the Service probed with the default configuration.
func checkShowsDead(t *testing.T, inst *e2e.Instance, target string) {
	t.Helper()
	addrs, svc := showEndpoint(t, inst, target)
	if want := (admin.ServiceLiveness{On: true, Probe: "icmp", IntervalSeconds: 0.2, Multiplier: 4, DetectionSeconds: 0.8, HoldDownSeconds: 5}); svc.Liveness != want {
		t.Errorf("show services: service-a liveness %+v, want %+v", svc.Liveness, want)
	}
	if len(addrs) != 2 {
		t.Fatalf("show services: %d addresses of %s", len(addrs), target)
	}
	for _, a := range addrs {
		if a.Ready || a.Entries != 0 || a.Liveness == nil || a.Liveness.Alive || a.Liveness.Transitions != 1 {
			t.Errorf("show services: %s: %+v (liveness %+v), want not ready, dead after one transition", a.Address, a, a.Liveness)
		}
	}
	text := sllbrd(t, inst.AdminSocket, "show", "endpoints")
	if !strings.Contains(text, "dead ") {
		t.Errorf("show endpoints says no endpoint is dead:\n%s", text)
	}
	t.Logf("sllbrd show endpoints:\n%s", text)
}

// waitAlive waits until inst reports the target's addresses alive (or
// dead), as metrics, and its hot path acts on it: both addresses ready and
// owning entries of service-a's tables (or neither). A transition reaches
// the metric before the apply that moves the flows (SetDead raises no
// generation), and traffic sent in between follows the old tables.
func waitAlive(t *testing.T, inst *e2e.Instance, target string, alive bool) {
	t.Helper()
	i := int(target[1] - '0')
	want := 0.0
	if alive {
		want = 2
	}
	var got float64
	for deadline := time.Now().Add(labHoldDown + 10*time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got = 0
		for _, a := range []netip.Addr{lab.TargetAddrs(i).V4.Addr(), lab.TargetAddrs(i).V6.Addr()} {
			v, found, err := inst.Metric(fmt.Sprintf(`sllbrd_endpoint_alive{address="%s"`, a))
			if err != nil || !found {
				got = -1
				break
			}
			got += v
		}
		if got == want && inHotPath(t, inst, target, alive) {
			return
		}
	}
	addrs, _ := showEndpoint(t, inst, target)
	t.Fatalf("%s: %s not %s (sllbrd_endpoint_alive summed %v; in the hot path: %s)", inst.Node, target, map[bool]string{true: "alive", false: "dead"}[alive], got, showAddrs(addrs))
}

// inHotPath reports whether inst's engine has both of the target's
// addresses ready and owning entries of service-a's tables (in), or
// neither (!in).
func inHotPath(t *testing.T, inst *e2e.Instance, target string, in bool) bool {
	t.Helper()
	addrs, _ := showEndpoint(t, inst, target)
	if len(addrs) != 2 {
		return false
	}
	for _, a := range addrs {
		if a.Ready != in || (a.Entries > 0) != in {
			return false
		}
	}
	return true
}

// showAddrs formats what show services says of some endpoint addresses.
func showAddrs(addrs []*admin.EndpointAddress) string {
	var parts []string
	for _, a := range addrs {
		parts = append(parts, fmt.Sprintf("%v ready=%v entries=%d", a.Address, a.Ready, a.Entries))
	}
	return strings.Join(parts, ", ")
}

// checkEventLogged: without an API server, each transition is a log line
// (rate-limited) naming the Service.
func checkEventLogged(t *testing.T, inst *e2e.Instance) {
	t.Helper()
	var dead, alive int
	for _, rec := range eventLines(t, inst, "service-a") {
		switch rec.Reason {
		case reasonEndpointDead:
			dead++
		case reasonEndpointAlive:
			alive++
		}
	}
	// Both addresses died; their return came within the minute of the
	// per-endpoint limit, so it is not reported again.
	if dead != 2 || alive != 0 {
		t.Errorf("log: %d EndpointDead and %d EndpointAlive lines of service-a, want 2 and 0 (one per endpoint per minute)", dead, alive)
	}
}

// eventLine is a liveness Event as sllbrd logs it without an API server.
type eventLine struct{ Reason, Note string }

// eventLines returns the Events of service that inst logged.
func eventLines(t *testing.T, inst *e2e.Instance, service string) []eventLine {
	t.Helper()
	type record struct{ Msg, Reason, Service, Note string }
	var out []eventLine
	for _, rec := range logJSON(t, inst, func(r record) bool { return r.Msg == "endpoint liveness" && r.Service == service }) {
		out = append(out, eventLine{rec.Reason, rec.Note})
	}
	return out
}

// TestIntegrationLivenessOff: with liveness off for the Service, a dead
// target keeps its flows (they are lost) and nothing else changes.
func TestIntegrationLivenessOff(t *testing.T) {
	l := dataplaneLab(t, 1, dataplaneKernel)
	dir, insts := startSllbrd(t, l, allTargets, webRoute, 1)
	inst := insts[0]
	if err := annotateService(dir, "service-a", "off"); err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, inst, 2)
	served := baselineFlows(t, l, 42000)
	s := startStream(t, l, streamFlowsOf(served, "t2", 12), 5000)
	time.Sleep(300 * time.Millisecond)
	faultAt := time.Now()
	linkDown.apply(t, l, "t2")
	time.Sleep(3 * labDetection)
	addrs, svc := showEndpoint(t, inst, "t2")
	if svc.Liveness.On {
		t.Errorf("show services: service-a liveness %+v, want off", svc.Liveness)
	}
	for _, a := range addrs {
		if !a.Ready || a.Liveness != nil {
			t.Errorf("show services: %s: %+v, want ready and not probed", a.Address, a)
		}
	}
	if v, found, err := inst.Metric(`sllbrd_liveness_probed_addresses{state="alive"}`); err != nil || !found || v != 0 {
		t.Errorf("probed addresses alive: %v (found %v, err %v), want 0", v, found, err)
	}
	if _, found, _ := inst.Metric("sllbrd_endpoint_alive{"); found {
		t.Error("sllbrd_endpoint_alive has series while nothing is probed")
	}
	checkNoneMoved(t, s, "liveness off", faultAt)
	linkDown.restore(t, l, "t2")
}

// checkNoneMoved stops the stream and checks what a fault of t2 that
// liveness does not see leaves: since faultAt no flow moved, t2's flows
// stayed on it and it answered none (but those in flight).
func checkNoneMoved(t *testing.T, s *askStream, what string, faultAt time.Time) {
	t.Helper()
	s.close()
	answers, errs := s.snapshot()
	defer debugAnswers(t, s, answers, faultAt)
	for _, err := range errs {
		t.Error(err)
	}
	for fam, is4 := range map[string]bool{"ipv4": true, "ipv6": false} {
		tl := s.analyse(answers, is4, "t2", faultAt, time.Time{})
		for _, m := range tl.misrouted {
			t.Errorf("%s, %s: %s", what, fam, m)
		}
		if len(tl.movedTo) != 0 {
			t.Errorf("%s, %s: %d flows of t2 moved", what, fam, len(tl.movedTo))
		}
		if late := tl.lastOnTarget.Sub(faultAt); late > 100*time.Millisecond {
			t.Errorf("%s, %s: t2 answered %v after the fault", what, fam, late)
		}
		t.Logf("%s, %s: t2's %d flows unanswered for the %v since the fault, none moved; the others' unmoved",
			what, fam, s.count(is4, "t2"), time.Since(faultAt).Round(time.Millisecond))
	}
}

// annotateService sets the endpoint-liveness annotation of a Service in the
// lab's manifests (written by e2e.Write), atomically.
func annotateService(dir, service, value string) error {
	path := filepath.Join(dir, "sllb-a.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	head := "kind: Service\nmetadata:\n  name: " + service + "\n"
	text := string(b)
	if strings.Count(text, head) != 1 {
		return fmt.Errorf("%s: Service %s not found once", path, service)
	}
	text = strings.Replace(text, head, head+fmt.Sprintf("  annotations: {meridio-experiment/endpoint-liveness: %q}\n", value), 1)
	tmp := filepath.Join(dir, ".sllb-a.yaml.tmp")
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
