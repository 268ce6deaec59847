package route

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// skipRulesIn lists the rules at the skip rule's priority of DefaultRanges,
// both families, with whether the kernel resolved their goto.
func skipRulesIn(t *testing.T, ns string) []string {
	t.Helper()
	var out []string
	for _, r := range rulesWithResolution(t, ns) {
		if strings.HasPrefix(r, "priority=9999 ") {
			out = append(out, r)
		}
	}
	return out
}

func rulesWithResolution(t *testing.T, ns string) []string {
	fields := append(slices.Clone(ruleFields), "unresolved")
	return append(ipJSON(t, ns, "-4 rule list", fields...), ipJSON(t, ns, "-6 rule list", fields...)...)
}

const skipLine = "priority=9999 not src=all fwmark=0x10000 fwmask=0xffff0000 goto=10002"

// routingOf asks the kernel how packets from each source with each mark,
// arriving on p0, are routed: the answer of ip route get (or its error).
func routingOf(ns string, srcs []string, marks []uint32) []string {
	var out []string
	for _, src := range srcs {
		for _, m := range marks {
			got, err := routeGet(ns, src, m)
			out = append(out, fmt.Sprintf("from %s mark %#x: %s (%v)", src, m, strings.Join(strings.Fields(got), " "), err))
		}
	}
	return out
}

// TestIntegrationSkipRule: the skip rule "not fwmark 0x10000/0xffff0000
// goto 10002", both families, on the real kernel. Add installs it; while
// no rule has priority 10002 (no return path) the kernel leaves it
// unresolved and skips it: an unmarked packet is routed by the main table,
// a marked one by its endpoint's table, as without it. With a return path
// it is resolved, and for packets from the VIPs and from elsewhere, marked
// with an endpoint's mark, a mark of the block without a rule, a mark
// outside the block or none, the kernel routes every one exactly as
// without the skip rules (deleted by hand, then put back by the next Add);
// an unmarked packet from a VIP takes the return path, a marked one its
// endpoint's table. Prune keeps it; Cleanup removes it.
func TestIntegrationSkipRule(t *testing.T) {
	ns, fd := forwardingLinks(t, "sllbrd-k-skip")
	rc, err := New(newKernel(t, fd))
	if err != nil {
		t.Fatal(err)
	}
	eps := []EndpointRoute{ep(0x10001, "10.1.0.2", "l0"), ep(0x10002, "fd01::2", "l0")}
	paths := []ReturnPath{{VIPs: addrs("20.0.0.1", "2000::1"), Table: 0x10100, Gateways: []Nexthop{
		gw("10.2.0.254", "l1"), gw("fd02::fe", "l1")}}}

	// No return path: nothing at 10002, the goto is unresolved and skipped.
	if err := reconcile(rc, eps, nil); err != nil {
		t.Fatal(err)
	}
	expectLines(t, "skip rules without a return path", skipRulesIn(t, ns), []string{skipLine + " unresolved", skipLine + " unresolved"})
	expectRouted(t, ns, "20.0.0.1", 0, "10.1.0.99")
	expectRouted(t, ns, "2000::1", 0, "fd01::99")
	expectRouted(t, ns, "20.0.0.1", 0x10001, "10.1.0.2")
	expectRouted(t, ns, "2000::1", 0x10002, "fd01::2")

	// With a return path the kernel resolves the goto.
	if err := reconcile(rc, eps, paths); err != nil {
		t.Fatal(err)
	}
	expectLines(t, "skip rules with a return path", skipRulesIn(t, ns), []string{skipLine, skipLine})
	expectRouted(t, ns, "20.0.0.1", 0, "10.2.0.254")
	expectRouted(t, ns, "2000::1", 0, "fd02::fe")
	expectRouted(t, ns, "20.0.0.1", 0x10001, "10.1.0.2")
	expectRouted(t, ns, "2000::1", 0x10002, "fd01::2")
	expectBlackholed(t, ns, "20.0.0.1", 0x10005)
	expectBlackholed(t, ns, "2000::1", 0x1ffff)

	srcs := []string{"20.0.0.1", "2000::1", "10.1.0.50", "fd01::50"}
	marks := []uint32{0, 5, 0x10000, 0x10001, 0x10002, 0x10005, 0x1ffff, 0x20005, 0x30001, 0xffffffff}
	with := routingOf(ns, srcs, marks)
	before := rulesWithResolution(t, ns)
	ipIn(t, ns, "rule del pref 9999 not fwmark 0x10000/0xffff0000 goto 10002")
	ipIn(t, ns, "-6 rule del pref 9999 not fwmark 0x10000/0xffff0000 goto 10002")
	if got := skipRulesIn(t, ns); len(got) != 0 {
		t.Fatalf("skip rules left after deleting them: %q", got)
	}
	expectLines(t, "routing with and without the skip rules", with, routingOf(ns, srcs, marks))
	if err := reconcile(rc, eps, paths); err != nil {
		t.Fatal(err)
	}
	expectLines(t, "rules after the next Add and Prune", rulesWithResolution(t, ns), before)

	// A goto in its place that the kernel cannot tell from it (not
	// inverted: it would send marked packets past their rules): the next
	// Add is refused it, its Prune deletes the other, the next Add puts
	// the skip rule back.
	ipIn(t, ns, "rule del pref 9999 not fwmark 0x10000/0xffff0000 goto 10002")
	ipIn(t, ns, "rule add pref 9999 fwmark 0x10000/0xffff0000 goto 10002")
	if err := reconcile(rc, eps, paths); err == nil || !strings.Contains(err.Error(), "pref 9999") {
		t.Errorf("reconcile over another goto in the skip rule's place: %v, want its add refused", err)
	}
	if err := reconcile(rc, eps, paths); err != nil {
		t.Fatal(err)
	}
	expectLines(t, "rules after the other goto", rulesWithResolution(t, ns), before)

	// Prune of everything keeps it (unresolved again); Cleanup removes it.
	if err := reconcile(rc, nil, nil); err != nil {
		t.Fatal(err)
	}
	expectLines(t, "skip rules with nothing desired", skipRulesIn(t, ns), []string{skipLine + " unresolved", skipLine + " unresolved"})
	expectRouted(t, ns, "20.0.0.1", 0, "10.1.0.99")
	if err := rc.Cleanup(); err != nil {
		t.Fatal(err)
	}
	expectLines(t, "skip rules after Cleanup", skipRulesIn(t, ns), nil)
}
