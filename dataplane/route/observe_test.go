package route

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// watchedFake is a fakeKernel that is a ChangeWatcher: changed is what
// the next ChangedElsewhere reports; lists counts the listings.
type watchedFake struct {
	*fakeKernel
	changed bool
	lists   int
}

func (w *watchedFake) ChangedElsewhere() bool {
	c := w.changed
	w.changed = false
	return c
}

func (w *watchedFake) Rules() ([]Rule, error) { w.lists++; return w.fakeKernel.Rules() }

var cacheEndpoints = []EndpointRoute{ep(0x10001, "10.0.0.2", "eth1"), ep(0x10002, "fd00::2", "eth1")}

func newWatched(t *testing.T, opts ...Option) (*watchedFake, *Reconciler) {
	t.Helper()
	k := &watchedFake{fakeKernel: newFakeKernel()}
	rc, err := New(k, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := reconcile(rc, cacheEndpoints, nil); err != nil {
		t.Fatal(err)
	}
	return k, rc
}

// TestObserveListsOnlyAfterChangesElsewhere: over a ChangeWatcher, the
// first Add lists the kernel and every later Add and Prune works from that
// listing and its own changes, until the watcher reports a change
// elsewhere: then the next Add lists again and repairs it.
func TestObserveListsOnlyAfterChangesElsewhere(t *testing.T) {
	k, rc := newWatched(t)
	want := k.ruleStrings()
	moved := []EndpointRoute{cacheEndpoints[0], ep(0x10003, "fd00::3", "eth1")}
	for _, eps := range [][]EndpointRoute{cacheEndpoints, moved, cacheEndpoints} {
		if err := reconcile(rc, eps, nil); err != nil {
			t.Fatal(err)
		}
	}
	if k.lists != 1 {
		t.Errorf("%d listings for four Add and Prune without a change elsewhere, want 1", k.lists)
	}
	if got := k.ruleStrings(); !slices.Equal(got, want) {
		t.Fatalf("rules after moving back\n got  %q\n want %q", got, want)
	}

	k.rules = slices.DeleteFunc(k.rules, func(r Rule) bool { return r.Mark == 0x10001 })
	k.routes = k.routes[1:]
	k.rules = append(k.rules, Rule{Family: IPv4, Priority: 10000, Mark: 0x10009, Mask: exactMask, Table: 0x10009})
	k.changed = true
	if err := reconcile(rc, cacheEndpoints, nil); err != nil {
		t.Fatal(err)
	}
	if got := k.ruleStrings(); !slices.Equal(got, want) || len(k.routes) != 4 || k.lists != 2 {
		t.Errorf("after a change elsewhere: %d listings, rules %q, %d routes; want 2 listings, rules %q, 4 routes",
			k.lists, got, len(k.routes), want)
	}
}

// TestObserveListsWhenListingIsOld: a change elsewhere that no
// notification reported is repaired by the first Add once the listing is
// older than the maximum age (the daemon's resync).
func TestObserveListsWhenListingIsOld(t *testing.T) {
	const age = 20 * time.Millisecond
	k, rc := newWatched(t, WithMaxListingAge(age))
	want := k.ruleStrings()
	lists := k.lists
	k.rules = slices.DeleteFunc(k.rules, func(r Rule) bool { return r.Mark == 0x10001 }) // unreported
	time.Sleep(2 * age)
	if err := reconcile(rc, cacheEndpoints, nil); err != nil {
		t.Fatal(err)
	}
	if got := k.ruleStrings(); k.lists == lists || !slices.Equal(got, want) {
		t.Errorf("after %v: %d new listings, rules %q; want a listing and rules %q", 2*age, k.lists-lists, got, want)
	}
}

// TestObserveListsAfterFailedChange: a change the kernel refuses may have
// been done in part, so the next Add lists again (and retries it).
func TestObserveListsAfterFailedChange(t *testing.T) {
	k, rc := newWatched(t)
	k.fail = func(op string) error {
		if strings.HasPrefix(op, "replace") {
			return errors.New("EINVAL")
		}
		return nil
	}
	moved := []EndpointRoute{ep(0x10001, "10.0.0.3", "eth1")}
	if err := rc.Add(moved, nil); err == nil {
		t.Fatal("a refused replace was not reported")
	}
	k.fail, k.ops = nil, nil
	lists := k.lists
	if err := rc.Add(moved, nil); err != nil {
		t.Fatal(err)
	}
	if k.lists != lists+1 || !slices.Contains(k.ops, "replace route ipv4 table 65537 default metric 100 via 10.0.0.3 ifindex 3") {
		t.Errorf("after a failed change: %d new listings, ops %q; want one listing and the replace again", k.lists-lists, k.ops)
	}
}

// TestObserveListsWhileInexact: while the kernel holds one of our rules
// twice, or a foreign rule at our priorities, where a deletion could act
// on another object than the one it names, every Add and Prune lists.
func TestObserveListsWhileInexact(t *testing.T) {
	for name, extra := range map[string]Rule{
		"duplicate": {Family: IPv4, Priority: 10000, Mark: 0x10001, Mask: exactMask, Table: 0x10001},
		"foreign":   {Family: IPv4, Priority: 10000, Mark: 0x10001, Mask: exactMask}, // e.g. with an iif: read with table 0
	} {
		t.Run(name, func(t *testing.T) {
			k, rc := newWatched(t)
			k.rules = append(k.rules, extra)
			k.changed = true
			lists := k.lists
			for range 2 {
				if err := reconcile(rc, cacheEndpoints, nil); err != nil {
					t.Fatal(err)
				}
			}
			if k.lists != lists+4 {
				t.Errorf("%d listings for two Add and Prune, want 4", k.lists-lists)
			}
		})
	}
}

// TestObserveWithoutWatcherListsEveryTime: a Kernel that is no
// ChangeWatcher is listed by every Add and Prune.
func TestObserveWithoutWatcherListsEveryTime(t *testing.T) {
	k := &countingKernel{fakeKernel: newFakeKernel()}
	rc, err := New(k)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := reconcile(rc, cacheEndpoints, nil); err != nil {
			t.Fatal(err)
		}
	}
	if k.lists != 4 {
		t.Errorf("%d listings for two Add and Prune, want 4", k.lists)
	}
}

type countingKernel struct {
	*fakeKernel
	lists int
}

func (c *countingKernel) Rules() ([]Rule, error) { c.lists++; return c.fakeKernel.Rules() }
