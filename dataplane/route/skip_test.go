package route

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestSkipRuleLifecycle: Add installs the skip rules right after the
// catch-all, before any route or fwmark rule, in both families; Prune keeps
// them, whatever the endpoints; Cleanup removes them, before the catch-all.
func TestSkipRuleLifecycle(t *testing.T) {
	k := newFakeKernel()
	rc, _ := New(k)
	paths := []ReturnPath{{VIPs: addrs("20.0.0.1", "2000::1"), Table: 0x10500, Gateways: []Nexthop{gw("10.9.0.1", "eth2")}}}
	if err := rc.Add([]EndpointRoute{ep(0x10001, "10.0.0.2", "eth1")}, paths); err != nil {
		t.Fatal(err)
	}
	if want := slices.Concat(catchAll, skip); len(k.ops) < 4 || !slices.Equal(k.ops[:4], []string{"add " + want[0], "add " + want[1], "add " + want[2], "add " + want[3]}) {
		t.Errorf("first operations %q, want the catch-all, then the skip rules %q", k.ops, skip)
	}
	for _, eps := range [][]EndpointRoute{{ep(0x10002, "fd00::2", "eth1")}, nil} {
		if err := reconcile(rc, eps, nil); err != nil {
			t.Fatal(err)
		}
		if got := k.ruleStrings(); !containsAll(got, skip) {
			t.Errorf("after Prune of %v: rules %q, want the skip rules kept", eps, got)
		}
	}
	k.ops = nil
	if err := rc.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if len(k.rules) != 0 {
		t.Errorf("after Cleanup: rules %v", k.rules)
	}
	last := slices.Index(k.ops, "del "+catchAll[0])
	for _, r := range skip {
		if i := slices.Index(k.ops, "del "+r); i < 0 || i > last {
			t.Errorf("Cleanup operations %q: %q must be deleted before the catch-all", k.ops, r)
		}
	}
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// TestSkipRuleFailureIsNotErrNoCatchAll: a skip rule the kernel refuses is
// reported, naming it, but not as ErrNoCatchAll (without it every packet is
// routed the same, only slower); the rest is applied and the next Add adds it.
func TestSkipRuleFailureIsNotErrNoCatchAll(t *testing.T) {
	k := newFakeKernel()
	k.fail = func(op string) error {
		if strings.HasPrefix(op, "add rule ipv6") && strings.Contains(op, "goto") {
			return errors.New("EPERM")
		}
		return nil
	}
	rc, _ := New(k)
	eps := []EndpointRoute{ep(0x10001, "fd00::2", "eth1")}
	err := rc.Add(eps, nil)
	if err == nil || errors.Is(err, ErrNoCatchAll) || !strings.Contains(err.Error(), skip[1]) {
		t.Fatalf("Add = %v, want an error naming %q, not ErrNoCatchAll", err, skip[1])
	}
	want := withBlockRules("rule ipv6 pref 10000 fwmark 0x10001 lookup 65537")
	if got := k.ruleStrings(); !slices.Equal(got, slices.DeleteFunc(slices.Clone(want), func(r string) bool { return r == skip[1] })) {
		t.Errorf("rules %q: all but the refused skip rule must be applied", got)
	}
	k.fail = nil
	if err := rc.Add(eps, nil); err != nil {
		t.Fatal(err)
	}
	if got := k.ruleStrings(); !slices.Equal(got, want) {
		t.Errorf("rules after the next Add\n got  %q\n want %q", got, want)
	}
}

// TestSkipRuleRepaired: over a ChangeWatcher, a skip rule someone deleted
// is added back by the next Add; one replaced by a goto the kernel cannot
// tell from it (not inverted: the kernel refuses ours as existing) is
// reported by the next Add, deleted by its Prune and added back by the
// following Add.
func TestSkipRuleRepaired(t *testing.T) {
	k, rc := newWatched(t)
	want := k.ruleStrings()
	k.rules = slices.DeleteFunc(k.rules, func(r Rule) bool { return r.Goto != 0 })
	k.rules = append(k.rules, Rule{Family: IPv4, Priority: 9999, Mark: 0x10000, Mask: 0xffff0000, Goto: 10002})
	k.changed = true
	err := reconcile(rc, cacheEndpoints, nil)
	if err == nil || !strings.Contains(err.Error(), skip[0]) || errors.Is(err, ErrNoCatchAll) {
		t.Errorf("reconcile with a rule in the IPv4 skip rule's place: %v, want its add refused", err)
	}
	if got := k.ruleStrings(); !slices.Contains(got, skip[1]) || slices.ContainsFunc(k.rules, func(r Rule) bool { return r.Goto != 0 && !r.Invert }) {
		t.Errorf("rules %q: want the IPv6 skip rule back and the other goto gone", got)
	}
	if err := reconcile(rc, cacheEndpoints, nil); err != nil {
		t.Fatal(err)
	}
	if got := k.ruleStrings(); !slices.Equal(got, want) {
		t.Errorf("rules after the next reconcile\n got  %q\n want %q", got, want)
	}
}

// TestSkipRuleDuplicateMakesListingInexact: two gotos at the skip rule's
// priority that the kernel's deletion cannot tell apart (it ignores a
// goto's target and "not"; a writer without NLM_F_EXCL can add both) make
// the listing inexact: Add and Prune list the kernel every time, since a
// deletion may remove the other rule, until the stale one is gone and ours
// is back; then they list no more.
func TestSkipRuleDuplicateMakesListingInexact(t *testing.T) {
	k, rc := newWatched(t)
	want := k.ruleStrings()
	k.rules = append(k.rules, Rule{Family: IPv6, Priority: 9999, Invert: true, Mark: 0x10000, Mask: 0xffff0000, Goto: 10003})
	k.changed = true
	before := k.lists
	_ = reconcile(rc, cacheEndpoints, nil) // the kernel may delete ours for the stale one: repaired below
	if k.lists-before != 2 {
		t.Errorf("%d listings for an Add and Prune over two rules the kernel cannot tell apart, want 2", k.lists-before)
	}
	for i := 0; i < 3 && !slices.Equal(k.ruleStrings(), want); i++ {
		_ = reconcile(rc, cacheEndpoints, nil)
	}
	if got := k.ruleStrings(); !slices.Equal(got, want) {
		t.Fatalf("rules\n got  %q\n want %q", got, want)
	}
	before = k.lists
	if err := reconcile(rc, cacheEndpoints, nil); err != nil || k.lists != before {
		t.Errorf("once repaired: %v, %d listings, want no error and none", err, k.lists-before)
	}
}
