package dataplane

import "testing"

func keys(svc string, ids ...int) []endpointKey {
	var out []endpointKey
	for _, id := range ids {
		out = append(out, endpointKey{svc, id})
	}
	return out
}

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
	// The cursor wraps: the next new slot finds 101 free.
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
