package soak

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// soakSpecs is a fault set shaped like the soak's.
func soakSpecs() []Spec {
	return []Spec{
		{Kind: "lb-kill", Weight: 3, Targets: []string{"lb1", "lb2", "lb3"}, Hold: 5 * time.Second, Bound: 3 * time.Second},
		{Kind: "bird-restart", Weight: 2, Targets: []string{"lb1", "lb2", "lb3"}, Hold: 0, Bound: 2 * time.Second},
		{Kind: "target-kill", Weight: 3, Targets: []string{"t1", "t2", "t3", "t4"}, Hold: 8 * time.Second, Bound: time.Second},
		{Kind: "controller-kill", Weight: 1, Targets: []string{"controller-a", "controller-b"}, Hold: 3 * time.Second},
		{Kind: "apiserver-restart", Weight: 1, Hold: 10 * time.Second, Excludes: []Kind{"controller-kill"}},
		{Kind: "link-flap", Weight: 2, Targets: []string{"lb1", "lb2", "lb3"}, Hold: 2 * time.Second, Bound: 3 * time.Second,
			Excludes: []Kind{"link-flap"}},
	}
}

// checkPlanInvariants checks a plan against the contract of Plan, by brute
// force over pairs of faults.
func checkPlanInvariants(t *testing.T, faults []Fault, d time.Duration, specs []Spec, o PlanOptions) {
	t.Helper()
	tail, maxOverlap := o.Tail, o.MaxOverlap
	if tail == 0 {
		tail = o.Settle
	}
	if maxOverlap == 0 {
		maxOverlap = 1
	}
	byKind := map[Kind]Spec{}
	seen := map[Kind]int{}
	for _, s := range specs {
		byKind[s.Kind] = s
	}
	excluded := func(a, b Kind) bool {
		return slices.Contains(byKind[a].Excludes, b) || slices.Contains(byKind[b].Excludes, a)
	}
	end := func(f Fault) time.Duration { return f.At + f.Hold + o.Settle }
	for i, f := range faults {
		s, ok := byKind[f.Kind]
		if !ok {
			t.Fatalf("fault %v: unknown kind", f)
		}
		seen[f.Kind]++
		if f.Seq != i {
			t.Errorf("fault %v: Seq %d, want its index %d", f, f.Seq, i)
		}
		if i > 0 && f.At < faults[i-1].At {
			t.Errorf("fault %v starts before %v", f, faults[i-1])
		}
		if f.At < 0 || f.At+f.Hold > d-tail {
			t.Errorf("fault %v is not reverted within [0, %v]", f, d-tail)
		}
		if f.Hold != s.Hold {
			t.Errorf("fault %v: hold %v, want the spec's %v", f, f.Hold, s.Hold)
		}
		targets := s.Targets
		if len(targets) == 0 {
			targets = []string{string(s.Kind)}
		}
		if !slices.Contains(targets, f.Target) {
			t.Errorf("fault %v: target not in %v", f, targets)
		}
		active := 1
		for _, g := range faults[:i] {
			if end(g) <= f.At { // windows are half-open; g starts no later than f
				continue
			}
			active++
			if g.Target == f.Target {
				t.Errorf("faults %v and %v overlap on one target", g, f)
			}
			if excluded(f.Kind, g.Kind) {
				t.Errorf("faults %v and %v overlap but exclude each other", g, f)
			}
		}
		if active > maxOverlap {
			t.Errorf("fault %v starts with %d faults active, max %d", f, active, maxOverlap)
		}
	}
	for _, s := range specs {
		if seen[s.Kind] == 0 {
			t.Errorf("kind %s never planned", s.Kind)
		}
	}
	if len(faults) > 0 {
		first := map[Kind]bool{}
		for _, f := range faults[:min(len(specs), len(faults))] {
			first[f.Kind] = true
		}
		if len(first) != len(specs) {
			t.Errorf("the first %d faults are not one of each kind: %v", len(specs), faults[:len(specs)])
		}
	}
}

func TestPlanInvariants(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    time.Duration
		o    PlanOptions
	}{
		{"serial", 10 * time.Minute, PlanOptions{MeanGap: 10 * time.Second, Settle: 5 * time.Second}},
		{"overlap 3", 10 * time.Minute, PlanOptions{MeanGap: 4 * time.Second, MaxOverlap: 3, Settle: 5 * time.Second}},
		{"dense", 2 * time.Minute, PlanOptions{MeanGap: time.Second, MaxOverlap: 6, Settle: 3 * time.Second, Tail: 20 * time.Second}},
		{"no settle", 5 * time.Minute, PlanOptions{MeanGap: 2 * time.Second, MaxOverlap: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range int64(100) {
				faults, err := Plan(seed, tc.d, soakSpecs(), tc.o)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				checkPlanInvariants(t, faults, tc.d, soakSpecs(), tc.o)
				if t.Failed() {
					t.Fatalf("seed %d broke the contract", seed)
				}
			}
		})
	}
}

func TestPlanOverlapsHappen(t *testing.T) {
	// Overlap is allowed, so a dense plan must use it: otherwise the overlap
	// rules above were never exercised.
	o := PlanOptions{MeanGap: time.Second, MaxOverlap: 3, Settle: 3 * time.Second}
	faults, err := Plan(1, 10*time.Minute, soakSpecs(), o)
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for i, f := range faults {
		n := 1
		for _, g := range faults[:i] {
			if g.At+g.Hold+o.Settle > f.At {
				n++
			}
		}
		most = max(most, n)
	}
	if most != 3 {
		t.Errorf("at most %d faults active at once, want MaxOverlap 3 reached", most)
	}
}

func TestPlanDeterministic(t *testing.T) {
	o := PlanOptions{MeanGap: 5 * time.Second, MaxOverlap: 2, Settle: 5 * time.Second}
	a, err := Plan(42, 10*time.Minute, soakSpecs(), o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Plan(42, 10*time.Minute, soakSpecs(), o)
	if !slices.Equal(a, b) {
		t.Error("the same seed gave two plans")
	}
	c, _ := Plan(43, 10*time.Minute, soakSpecs(), o)
	if slices.Equal(a, c) {
		t.Error("seeds 42 and 43 gave the same plan")
	}
}

func TestPlanWeights(t *testing.T) {
	specs := []Spec{{Kind: "often", Weight: 9}, {Kind: "rare", Weight: 1}}
	faults, err := Plan(7, 10*time.Hour, specs, PlanOptions{MeanGap: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	n := map[Kind]int{}
	for _, f := range faults[len(specs):] {
		n[f.Kind]++
	}
	// About 3,600 weighted picks: 9:1 expected, 5:1 is far outside chance.
	if n["often"] < 5*n["rare"] || n["rare"] == 0 {
		t.Errorf("picks %v, want about 9:1", n)
	}
}

func TestPlanShortestDuration(t *testing.T) {
	specs := []Spec{{Kind: "a", Weight: 1, Hold: 4 * time.Second}, {Kind: "b", Weight: 1, Hold: 0}}
	o := PlanOptions{MeanGap: 2 * time.Second, Settle: time.Second}
	// One round at the longest gaps: 2*(3s) + 4s + 0s + 2*1s = 12s, plus the
	// tail (Settle, 1s).
	for seed := range int64(50) {
		faults, err := Plan(seed, 13*time.Second, specs, o)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkPlanInvariants(t, faults, 13*time.Second, specs, o)
	}
	if _, err := Plan(0, 13*time.Second-1, specs, o); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Errorf("one nanosecond less: err %v, want too short", err)
	}
}

func TestPlanErrors(t *testing.T) {
	ok := PlanOptions{MeanGap: time.Second}
	one := []Spec{{Kind: "a", Weight: 1}}
	for _, tc := range []struct {
		name  string
		d     time.Duration
		specs []Spec
		o     PlanOptions
		want  string
	}{
		{"no kinds", time.Hour, nil, ok, "no fault kinds"},
		{"zero weight", time.Hour, []Spec{{Kind: "a"}}, ok, "weight 0"},
		{"negative weight", time.Hour, []Spec{{Kind: "a", Weight: -1}}, ok, "weight -1"},
		{"no kind", time.Hour, []Spec{{Weight: 1}}, ok, "without a kind"},
		{"kind twice", time.Hour, []Spec{{Kind: "a", Weight: 1}, {Kind: "a", Weight: 1}}, ok, "a given twice"},
		{"negative hold", time.Hour, []Spec{{Kind: "a", Weight: 1, Hold: -1}}, ok, "negative hold"},
		{"empty target", time.Hour, []Spec{{Kind: "a", Weight: 1, Targets: []string{""}}}, ok, "empty or repeated target"},
		{"repeated target", time.Hour, []Spec{{Kind: "a", Weight: 1, Targets: []string{"x", "x"}}}, ok, `repeated target "x"`},
		{"unknown exclude", time.Hour, []Spec{{Kind: "a", Weight: 1, Excludes: []Kind{"b"}}}, ok, "excludes unknown kind b"},
		{"no gap", time.Hour, one, PlanOptions{}, "MeanGap 0s must be positive"},
		{"negative overlap", time.Hour, one, PlanOptions{MeanGap: time.Second, MaxOverlap: -1}, "negative MaxOverlap"},
		{"too short", time.Second, one, ok, "too short for one round of 1 kinds"},
		{"tail eats all", time.Hour, one, PlanOptions{MeanGap: time.Second, Tail: time.Hour}, "too short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Plan(1, tc.d, tc.specs, tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}
