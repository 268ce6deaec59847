package soak

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Kind names a fault kind ("lb-kill", "bird-restart", ...).
type Kind string

// Spec describes one fault kind of the plan.
type Spec struct {
	Kind   Kind
	Weight int // relative frequency after the first round; > 0
	// Targets are the objects the fault can hit; empty: one global object
	// named after the kind.
	Targets []string
	Hold    time.Duration // how long before the fault is reverted; 0: instantaneous
	Bound   time.Duration // the documented worst loss window of the traffic it disturbs
	// Excludes are kinds that must not overlap this one (either way round).
	Excludes []Kind
}

// PlanOptions shape the schedule.
type PlanOptions struct {
	// MeanGap is the mean time between two fault starts; each gap is drawn
	// uniformly from [MeanGap/2, 3*MeanGap/2]. > 0.
	MeanGap time.Duration
	// MaxOverlap is how many faults may be active at once; 0 means 1.
	MaxOverlap int
	// Settle is how long after its revert a fault still counts as active
	// (the system converging): windows are [At, At+Hold+Settle).
	Settle time.Duration
	// Tail is the quiet time at the end: every fault is reverted by d-Tail.
	// 0 means Settle.
	Tail time.Duration
}

// Fault is one planned fault.
type Fault struct {
	Seq    int // its index in the plan
	Kind   Kind
	Target string
	At     time.Duration // offset from the start
	Hold   time.Duration
}

// String is how logs name the fault.
func (f Fault) String() string {
	return fmt.Sprintf("#%d %s %s at %v hold %v", f.Seq, f.Kind, f.Target, f.At, f.Hold)
}

// planner is one Plan call's state.
type planner struct {
	rng      *rand.Rand
	specs    map[Kind]Spec
	excludes map[[2]Kind]bool // symmetric
	o        PlanOptions
	faults   []Fault
}

// Plan returns the fault schedule for a run of duration d: deterministic
// for (seed, d, specs, o). The first len(specs) faults are every kind once
// in a shuffled order; the rest are weighted picks, until the next one would
// not be reverted by d-Tail. A fault that cannot start at its drawn time
// (a target in use, an excluded kind active, MaxOverlap reached) waits for
// the active faults to end. It fails on bad specs or options, and when d
// cannot hold one round of every kind (checked up front against the
// longest gaps, so it does not depend on the seed).
func Plan(seed int64, d time.Duration, specs []Spec, o PlanOptions) ([]Fault, error) {
	if err := checkPlan(d, specs, &o); err != nil {
		return nil, err
	}
	p := &planner{
		rng:      rand.New(rand.NewPCG(uint64(seed), 0x736f616b)),
		specs:    map[Kind]Spec{},
		excludes: map[[2]Kind]bool{},
		o:        o,
	}
	for _, s := range specs {
		p.specs[s.Kind] = s
		for _, x := range s.Excludes {
			p.excludes[[2]Kind{s.Kind, x}] = true
			p.excludes[[2]Kind{x, s.Kind}] = true
		}
	}
	end := d - o.Tail
	round := make([]Kind, len(specs))
	for i, s := range specs {
		round[i] = s.Kind
	}
	p.rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
	var t time.Duration
	for i := 0; ; i++ {
		var k Kind
		if i < len(round) {
			k = round[i]
		} else {
			k = p.pick(specs)
		}
		t += o.MeanGap/2 + time.Duration(p.rng.Int64N(int64(o.MeanGap)+1))
		f := p.place(k, t)
		if f.At+f.Hold > end {
			if i < len(round) { // checkPlan's bound makes this unreachable
				return nil, fmt.Errorf("soak plan: %s does not fit in the first round of %v", k, d)
			}
			return p.faults, nil
		}
		t = f.At
		p.faults = append(p.faults, f)
	}
}

func checkPlan(d time.Duration, specs []Spec, o *PlanOptions) error {
	if len(specs) == 0 {
		return errors.New("soak plan: no fault kinds")
	}
	if o.MeanGap <= 0 {
		return fmt.Errorf("soak plan: MeanGap %v must be positive", o.MeanGap)
	}
	if o.MaxOverlap < 0 || o.Settle < 0 || o.Tail < 0 {
		return fmt.Errorf("soak plan: negative MaxOverlap %d, Settle %v or Tail %v", o.MaxOverlap, o.Settle, o.Tail)
	}
	if o.MaxOverlap == 0 {
		o.MaxOverlap = 1
	}
	if o.Tail == 0 {
		o.Tail = o.Settle
	}
	kinds := map[Kind]bool{}
	for _, s := range specs {
		if s.Kind == "" {
			return errors.New("soak plan: a spec without a kind")
		}
		if kinds[s.Kind] {
			return fmt.Errorf("soak plan: kind %s given twice", s.Kind)
		}
		kinds[s.Kind] = true
	}
	// The longest first round: each fault waits for all before it, after the
	// longest gap.
	round := time.Duration(0)
	for _, s := range specs {
		if err := checkSpec(s, kinds); err != nil {
			return err
		}
		round += o.MeanGap*3/2 + s.Hold + o.Settle
	}
	if d-o.Tail < round {
		return fmt.Errorf("soak plan: %v minus a tail of %v is too short for one round of %d kinds (needs %v)",
			d, o.Tail, len(specs), round)
	}
	return nil
}

func checkSpec(s Spec, kinds map[Kind]bool) error {
	if s.Weight <= 0 {
		return fmt.Errorf("soak plan: %s has weight %d, want > 0", s.Kind, s.Weight)
	}
	if s.Hold < 0 || s.Bound < 0 {
		return fmt.Errorf("soak plan: %s has a negative hold %v or bound %v", s.Kind, s.Hold, s.Bound)
	}
	seen := map[string]bool{}
	for _, t := range s.Targets {
		if t == "" || seen[t] {
			return fmt.Errorf("soak plan: %s has an empty or repeated target %q", s.Kind, t)
		}
		seen[t] = true
	}
	for _, x := range s.Excludes {
		if !kinds[x] {
			return fmt.Errorf("soak plan: %s excludes unknown kind %s", s.Kind, x)
		}
	}
	return nil
}

// pick draws a kind by weight.
func (p *planner) pick(specs []Spec) Kind {
	total := 0
	for _, s := range specs {
		total += s.Weight
	}
	n := p.rng.IntN(total)
	for _, s := range specs {
		if n < s.Weight {
			return s.Kind
		}
		n -= s.Weight
	}
	panic("unreachable: n < total")
}

// place returns a fault of kind k at the first time >= t where it is
// allowed, with a target drawn among the free ones. Faults are placed in
// time order, so the faults overlapping a new one at t are those whose
// window has not ended by t.
func (p *planner) place(k Kind, t time.Duration) Fault {
	s := p.specs[k]
	targets := s.Targets
	if len(targets) == 0 {
		targets = []string{string(k)}
	}
	for {
		var active []Fault
		next := time.Duration(-1) // the earliest end of an active fault
		for _, f := range p.faults {
			if e := p.windowEnd(f); e > t {
				active = append(active, f)
				if next < 0 || e < next {
					next = e
				}
			}
		}
		if free := p.free(k, targets, active); len(free) > 0 {
			return Fault{Seq: len(p.faults), Kind: k, Target: free[p.rng.IntN(len(free))], At: t, Hold: s.Hold}
		}
		t = next // some fault is active, or free would not be empty
	}
}

// free lists the targets a fault of kind k may hit alongside active.
func (p *planner) free(k Kind, targets []string, active []Fault) []string {
	if len(active) >= p.o.MaxOverlap {
		return nil
	}
	for _, f := range active {
		if p.excludes[[2]Kind{k, f.Kind}] {
			return nil
		}
	}
	return slices.DeleteFunc(slices.Clone(targets), func(t string) bool {
		return slices.ContainsFunc(active, func(f Fault) bool { return f.Target == t })
	})
}

func (p *planner) windowEnd(f Fault) time.Duration { return f.At + f.Hold + p.o.Settle }
