package reconcile

import (
	"net/netip"
	"testing"
	"time"
)

// TestDeadChangeReapplies: a new dead set is applied with the same state;
// the same set again (nil, empty, false entries alike) is not; the loop
// keeps its own copy.
func TestDeadChangeReapplies(t *testing.T) {
	r := &recorder{}
	l := start(t, r, WithResync(0))
	l.SetState(gen(1), time.Now())
	wait(t, r, func() bool { _, n := r.last(); return n == 1 })
	a, b := netip.MustParseAddr("169.111.100.12"), netip.MustParseAddr("fd00:111::12")
	dead := map[netip.Addr]bool{a: true, b: false}
	l.SetDead(dead)
	wait(t, r, func() bool { _, n := r.last(); return n == 2 })
	dead[b] = true // the caller's map is not the loop's
	d, _ := r.last()
	if len(d.Dead) != 1 || !d.Dead[a] || d.State.Generation != 1 {
		t.Fatalf("apply 2: dead %v generation %d, want only %v with generation 1", d.Dead, d.State.Generation, a)
	}
	l.SetDead(map[netip.Addr]bool{a: true, b: false}) // the same set
	time.Sleep(60 * time.Millisecond)
	if _, n := r.last(); n != 2 {
		t.Fatalf("%d applies after setting the same dead set, want 2", n)
	}
	l.SetDead(nil)
	wait(t, r, func() bool { _, n := r.last(); return n == 3 })
	if d, _ := r.last(); len(d.Dead) != 0 {
		t.Fatalf("apply 3: dead %v, want none", d.Dead)
	}
	l.SetDead(map[netip.Addr]bool{}) // empty is nil
	time.Sleep(60 * time.Millisecond)
	if _, n := r.last(); n != 3 {
		t.Fatalf("%d applies after setting an empty dead set, want 3", n)
	}
}

func TestSameSet(t *testing.T) {
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for _, tc := range []struct {
		x, y map[netip.Addr]bool
		want bool
	}{
		{nil, nil, true},
		{nil, map[netip.Addr]bool{a: false}, true},
		{map[netip.Addr]bool{a: true}, map[netip.Addr]bool{a: true, b: false}, true},
		{map[netip.Addr]bool{a: true}, map[netip.Addr]bool{b: true}, false},
		{map[netip.Addr]bool{a: true}, nil, false},
		{nil, map[netip.Addr]bool{a: true}, false},
		{map[netip.Addr]bool{a: true, b: true}, map[netip.Addr]bool{a: true}, false},
	} {
		if got := sameSet(tc.x, tc.y); got != tc.want {
			t.Errorf("sameSet(%v, %v) = %v, want %v", tc.x, tc.y, got, tc.want)
		}
	}
}
