package liveness

import (
	"testing"
	"time"
)

// driver ticks a machine every Interval from t0 and replies rtt after the
// ticks the target answers.
type driver struct {
	t   *testing.T
	m   machine
	cfg Config
	t0  time.Time
	k   int // ticks so far
	rtt time.Duration
}

func newDriver(t *testing.T, cfg Config) *driver {
	t0 := time.Unix(1000, 0)
	return &driver{t: t, m: newMachine(t0), cfg: cfg, t0: t0, rtt: time.Millisecond}
}

func (d *driver) tickAt(k int) time.Time { return d.t0.Add(time.Duration(k) * d.cfg.Interval) }

// step ticks once and, if answered, replies; it returns the changes.
func (d *driver) step(answered bool) []Change {
	d.k++
	var out []Change
	now := d.tickAt(d.k)
	if c, ok := d.m.tick(now, d.cfg); ok {
		out = append(out, c)
	}
	if answered {
		if c, ok := d.m.reply(now.Add(d.rtt), d.rtt, d.cfg); ok {
			out = append(out, c)
		}
	}
	return out
}

func (d *driver) steps(n int, answered bool) []Change {
	var out []Change
	for range n {
		out = append(out, d.step(answered)...)
	}
	return out
}

var defaultCfg = Config{Interval: 200 * time.Millisecond, Multiplier: 4, HoldDown: 5 * time.Second}

func TestMachineDeadExactlyAfterMultiplierIntervals(t *testing.T) {
	for _, m := range []int{1, 3, 4} {
		cfg := Config{Interval: 100 * time.Millisecond, Multiplier: m}
		d := newDriver(t, cfg)
		if cs := d.steps(10, true); len(cs) != 0 || !d.m.alive {
			t.Fatalf("M=%d: answering target: %+v", m, cs)
		}
		last := d.k // probe d.k was answered; the following are not
		if cs := d.steps(m, false); len(cs) != 0 {
			t.Fatalf("M=%d: dead after %d unanswered probes, before its Multiplier intervals ended: %+v", m, m, cs)
		}
		cs := d.step(false)
		if len(cs) != 1 || cs[0].Alive {
			t.Fatalf("M=%d: want dead at tick %d, got %+v", m, d.k, cs)
		}
		// Decided when the M-th unanswered interval ended: exactly M
		// intervals after the first unanswered probe went out.
		if got, want := cs[0].At.Sub(d.tickAt(last+1)), cfg.Detection(); got != want {
			t.Errorf("M=%d: dead %v after the first unanswered probe, want %v", m, got, want)
		}
		if got, want := cs[0].Detection, cfg.Detection()+cfg.Interval-d.rtt; got != want {
			t.Errorf("M=%d: Detection %v (since the last reply), want %v", m, got, want)
		}
		if d.m.transitions != 1 || d.m.since != cs[0].At {
			t.Errorf("M=%d: transitions %d since %v", m, d.m.transitions, d.m.since)
		}
	}
}

// TestMachineMissesBelowMultiplier: isolated misses never kill.
func TestMachineMissesBelowMultiplier(t *testing.T) {
	d := newDriver(t, defaultCfg)
	for range 50 {
		if cs := append(d.steps(3, false), d.step(true)...); len(cs) != 0 {
			t.Fatalf("3 misses of 4 then a reply: %+v", cs)
		}
	}
}

func TestMachineHoldDown(t *testing.T) {
	cfg := Config{Interval: 100 * time.Millisecond, Multiplier: 3, HoldDown: time.Second}
	d := newDriver(t, cfg)
	d.steps(2, true)
	if cs := d.steps(4, false); len(cs) != 1 || cs[0].Alive {
		t.Fatalf("want dead: %+v", cs)
	}
	first := d.tickAt(d.k + 1).Add(d.rtt) // the first reply of the recovery
	var back []Change
	for range 30 {
		// Isolated misses (fewer than Multiplier in a row) do not restart
		// the recovery.
		back = append(back, d.steps(3, true)...)
		back = append(back, d.steps(2, false)...)
		if len(back) > 0 {
			break
		}
	}
	if len(back) != 1 || !back[0].Alive {
		t.Fatalf("want alive once: %+v", back)
	}
	held := back[0].At.Sub(first)
	if held < cfg.HoldDown || held >= cfg.HoldDown+cfg.Interval*3 || back[0].Detection != held {
		t.Errorf("alive %v after the first reply (Detection %v), want the first reply at or after %v", held, back[0].Detection, cfg.HoldDown)
	}
}

func TestMachineHoldDownZero(t *testing.T) {
	d := newDriver(t, Config{Interval: 100 * time.Millisecond, Multiplier: 2})
	d.steps(1, true)
	d.steps(3, false)
	cs := d.step(true)
	if len(cs) != 1 || !cs[0].Alive || cs[0].At != d.tickAt(d.k).Add(d.rtt) || cs[0].Detection != 0 {
		t.Fatalf("hold-down 0: want alive at the first reply: %+v", cs)
	}
}

// TestMachineFlappingStaysDead: a target that answers for less than the
// hold-down between runs of Multiplier misses never comes back; once it is
// stable, it does, after the hold-down.
func TestMachineFlappingStaysDead(t *testing.T) {
	d := newDriver(t, defaultCfg) // 200 ms × 4, hold-down 5 s
	d.steps(5, true)
	if cs := d.steps(5, false); len(cs) != 1 {
		t.Fatalf("want dead: %+v", cs)
	}
	for range 20 { // 4 s answering, 0.8 s silent: 96 s of flapping
		if cs := append(d.steps(20, true), d.steps(4, false)...); len(cs) != 0 {
			t.Fatalf("flapping target changed: %+v", cs)
		}
	}
	cs := d.steps(40, true)
	if len(cs) != 1 || !cs[0].Alive || cs[0].Detection < defaultCfg.HoldDown {
		t.Fatalf("stable target: %+v", cs)
	}
}

// TestMachineConfigChange: a smaller Multiplier applies at the next tick;
// a larger one lets a miss run continue.
func TestMachineConfigChange(t *testing.T) {
	d := newDriver(t, defaultCfg)
	d.steps(3, true)
	d.steps(3, false) // 2 misses counted (the first unanswered interval ends at the next tick)
	d.cfg.Multiplier = 2
	if cs := d.step(false); len(cs) != 1 || cs[0].Alive {
		t.Fatalf("multiplier lowered to the run's length: want dead, got %+v", cs)
	}
	d2 := newDriver(t, Config{Interval: 100 * time.Millisecond, Multiplier: 2})
	d2.steps(2, true)
	d2.steps(2, false)
	d2.cfg.Multiplier = 5
	if cs := d2.steps(3, false); len(cs) != 0 {
		t.Fatalf("multiplier raised: dead too early: %+v", cs)
	}
	if cs := d2.step(false); len(cs) != 1 {
		t.Fatalf("multiplier raised: want dead after 5 misses: %+v", cs)
	}
}

// TestMachineNeverAnswered: an address that never answers is dead after
// Multiplier intervals from its first probe and Detection + FirstReplyGrace
// from when it was added (its first probes may wait for the neighbour
// resolution's retransmit); Detection counts from when it was added.
func TestMachineNeverAnswered(t *testing.T) {
	d := newDriver(t, defaultCfg) // 200 ms × 4: dead at the first tick at or after 1.8 s
	graceTicks := int((defaultCfg.Detection() + FirstReplyGrace) / defaultCfg.Interval)
	if cs := d.steps(graceTicks-1, false); len(cs) != 0 {
		t.Fatalf("dead within the first reply grace: %+v", cs)
	}
	cs := d.step(false)
	if len(cs) != 1 || cs[0].Alive || cs[0].Detection != d.tickAt(d.k).Sub(d.t0) || cs[0].Detection != defaultCfg.Detection()+FirstReplyGrace {
		t.Fatalf("%+v, want dead %v after it was added", cs, defaultCfg.Detection()+FirstReplyGrace)
	}
}

// TestMachineFirstReplyLate: an address whose first probes wait a second
// for the neighbour resolution, then are all answered, is never dead; once
// it has answered, the grace is over.
func TestMachineFirstReplyLate(t *testing.T) {
	d := newDriver(t, defaultCfg)
	if cs := append(d.steps(6, false), d.steps(5, true)...); len(cs) != 0 {
		t.Fatalf("first replies 1.2 s late (a lost neighbour resolution exchange) took it out: %+v", cs)
	}
	if cs := d.steps(defaultCfg.Multiplier+1, false); len(cs) != 1 || cs[0].Alive {
		t.Fatalf("after its first reply, want dead after Multiplier misses: %+v", cs)
	}
}
