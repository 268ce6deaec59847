package dataplane

import (
	"strings"
	"testing"
)

func keys(svc string, ids ...int) []endpointKey {
	var out []endpointKey
	for _, id := range ids {
		out = append(out, endpointKey{svc, id})
	}
	return out
}

func releaseAll(uint32) bool { return false }

func TestMarkPlan(t *testing.T) {
	p := newMarkPlan(100, 4)
	p, err := p.next(keys("a", 0, 1, 2))
	if err != nil {
		t.Fatal(err)
	}
	if got := []uint32{p.byKey[endpointKey{"a", 0}], p.byKey[endpointKey{"a", 1}], p.byKey[endpointKey{"a", 2}]}; got[0] != 100 || got[1] != 101 || got[2] != 102 {
		t.Fatalf("first marks = %v, want 100 101 102", got)
	}
	// Free 1, add 3: 3 takes the never-used 103, not the just-freed 101.
	p, _ = p.next(keys("a", 0, 2, 3))
	if m := p.byKey[endpointKey{"a", 3}]; m != 103 {
		t.Fatalf("new slot got %d, want 103", m)
	}
	// The cursor wraps: once released, the next new slot finds 101 free.
	p = p.release(releaseAll)
	p, _ = p.next(keys("a", 0, 2, 3, 4))
	if m := p.byKey[endpointKey{"a", 4}]; m != 101 {
		t.Fatalf("after wrap got %d, want 101", m)
	}
	if _, err := p.next(keys("a", 0, 1, 2, 3, 4)); err == nil {
		t.Fatal("5 slots in a range of 4: no error")
	}
	if p.byKey[endpointKey{"a", 0}] != 100 {
		t.Fatal("a failed next changed the plan")
	}
}

// TestMarkPlanHeld: the mark of a removed slot is used until released: no
// other slot gets it (even when the range is full), and the slot takes it
// back if it returns first.
func TestMarkPlanHeld(t *testing.T) {
	p, _ := newMarkPlan(100, 3).next(keys("a", 0, 1))
	// Remove 0, add 2: 2 must not take 100, held for 0.
	p, err := p.next(keys("a", 1, 2))
	if err != nil {
		t.Fatal(err)
	}
	if m := p.byKey[endpointKey{"a", 2}]; m != 102 {
		t.Fatalf("new slot got %d, want 102", m)
	}
	// Remove 1 too and add 3: 2 live + 2 held > 3 marks.
	if _, err := p.next(keys("a", 2, 3)); err == nil || !strings.Contains(err.Error(), "held") {
		t.Fatalf("a held mark was given to another slot: err %v", err)
	}
	// 0 comes back: it gets 100 again, and the plan has room once more.
	p, err = p.next(keys("a", 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	if m := p.byKey[endpointKey{"a", 0}]; m != 100 {
		t.Fatalf("returning slot got %d, want its mark 100", m)
	}
	if m, held := p.held[endpointKey{"a", 1}]; !held || m != 101 {
		t.Fatalf("slot 1's mark not held: %v", p.held)
	}
	// Released (its routes are gone): 101 is free for a new slot.
	p = p.release(func(m uint32) bool { return m != 101 })
	p, err = p.next(keys("a", 0, 2, 3))
	if err != nil || p.byKey[endpointKey{"a", 3}] != 101 {
		t.Fatalf("new slot after release: %v, marks %v; want 101", err, p.byKey)
	}
}
