package liveness

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// addrRange returns n consecutive addresses from first.
func addrRange(first string, n int) []netip.Addr {
	var out []netip.Addr
	for a := netip.MustParseAddr(first); len(out) < n; a = a.Next() {
		out = append(out, a)
	}
	return out
}

// bursts returns how many probes went out at each instant since from, in
// time order.
func (s *sim) bursts(from time.Time) []int {
	n := map[time.Time]int{}
	for _, r := range s.sent {
		if !r.at.Before(from) {
			n[r.at]++
		}
	}
	var out []int
	for _, at := range slices.SortedFunc(func(yield func(time.Time) bool) {
		for at := range n {
			if !yield(at) {
				return
			}
		}
	}, time.Time.Compare) {
		out = append(out, n[at])
	}
	return out
}

func (s *sim) group(a netip.Addr) groupKey { return s.p.byAddr[a].grp }

// TestProberGroups: addresses of one interval go out together, up to
// maxGroup at once; a new address fills the fullest group that has room;
// another interval has groups of its own.
func TestProberGroups(t *testing.T) {
	s := newSim(t)
	few := append(addrRange("10.0.0.1", 5), addrRange("2001:db8::1", 5)...)
	s.p.Set(targets(defaultCfg, few...))
	start := s.clock.Now()
	s.advance(time.Second)
	if got := s.bursts(start); !slices.Equal(got, []int{10, 10, 10, 10, 10}) {
		t.Errorf("10 addresses for 1 s: bursts %v, want all 10 together once per interval", got)
	}

	// 40: a full group and a group of 8.
	more := addrRange("10.0.1.1", 30)
	all := append(slices.Clone(few), more...)
	s.p.Set(targets(defaultCfg, all...))
	s.advance(defaultCfg.Interval) // the new ones' first probes
	start = s.clock.Now()
	s.advance(time.Second)
	got := s.bursts(start)
	if len(got) != 10 || slices.Max(got) != maxGroup || slices.Min(got) != 40-maxGroup {
		t.Errorf("40 addresses for 1 s: bursts %v, want %d and %d once per interval each", got, maxGroup, 40-maxGroup)
	}
	full, small := s.group(few[0]), s.group(more[len(more)-1])
	if full == small || s.p.groups[full] != maxGroup || s.p.groups[small] != 40-maxGroup {
		t.Fatalf("groups %v", s.p.groups)
	}

	// Three of the full group leave; three new addresses fill it again,
	// not the group of 8.
	var gone []netip.Addr
	for _, a := range all {
		if len(gone) < 3 && s.group(a) == full {
			gone = append(gone, a)
		}
	}
	kept := slices.DeleteFunc(slices.Clone(all), func(a netip.Addr) bool { return slices.Contains(gone, a) })
	added := addrRange("10.0.2.1", 3)
	s.p.Set(targets(defaultCfg, append(kept, added...)...))
	for _, a := range added {
		if s.group(a) != full {
			t.Errorf("%v joined %+v, want the fullest group with room %+v", a, s.group(a), full)
		}
	}
	if s.p.groups[full] != maxGroup || s.p.groups[small] != 40-maxGroup || len(s.p.groups) != 2 {
		t.Errorf("groups %v", s.p.groups)
	}

	// Another interval: a group of its own, at another phase.
	fast := Config{Interval: 100 * time.Millisecond, Multiplier: 4}
	other := addrRange("10.0.3.1", 2)
	s.p.Set(append(targets(defaultCfg, append(kept, added...)...), targets(fast, other...)...))
	if g := s.group(other[0]); g.interval != fast.Interval || g != s.group(other[1]) || s.p.groups[g] != 2 {
		t.Errorf("addresses of another interval: groups %+v %+v", g, s.group(other[1]))
	}
	// Everything forgotten: no group left.
	s.p.Set(nil)
	if len(s.p.groups) != 0 || s.p.sched.Len() != 0 {
		t.Errorf("after Set(nil): groups %v, %d scheduled", s.p.groups, s.p.sched.Len())
	}
}

// TestProberGroupAfterStall: a prober that falls behind by several
// intervals sends each due probe once, late, and the next a whole interval
// later at the earliest; the group stays together.
func TestProberGroupAfterStall(t *testing.T) {
	s := newSim(t)
	addrs := addrRange("10.0.0.1", 6)
	s.p.Set(targets(defaultCfg, addrs...))
	s.advance(time.Second)
	s.clock.Advance(3*defaultCfg.Interval + 30*time.Millisecond) // stalled
	from := s.clock.Now()
	s.advance(2 * defaultCfg.Interval)
	got := s.bursts(from)
	if len(got) != 2 || got[0] != 6 || got[1] != 6 {
		t.Fatalf("after a stall: bursts %v, want 6 at once, twice", got)
	}
	ts := s.sendTimes(addrs[0])
	late, next := ts[len(ts)-2], ts[len(ts)-1]
	if late.Sub(from) > time.Millisecond || next.Sub(late) < defaultCfg.Interval || next.Sub(late) >= 2*defaultCfg.Interval {
		t.Errorf("after the stall: probed %v after, then %v later; want at once, then within [1, 2) intervals", late.Sub(from), next.Sub(late))
	}
	if len(s.takeChanges()) != 0 {
		t.Error("a stalled prober found addresses dead")
	}
}

// TestProberIntervalChangeKeepsGap: an address whose interval changes joins
// a group of the new interval (together with others changed alike), and its
// next probe comes no sooner than the shorter interval after its previous
// one.
func TestProberIntervalChangeKeepsGap(t *testing.T) {
	for _, iv := range []time.Duration{50 * time.Millisecond, 500 * time.Millisecond} {
		s := newSim(t)
		addrs := addrRange("10.0.0.1", 4)
		s.p.Set(targets(defaultCfg, addrs...))
		s.advance(time.Second + 3*time.Millisecond) // just after a probe
		changed := Config{Interval: iv, Multiplier: 4}
		s.p.Set(append(targets(defaultCfg, addrs[:2]...), targets(changed, addrs[2:]...)...))
		if g := s.group(addrs[2]); g.interval != iv || g != s.group(addrs[3]) || s.p.groups[g] != 2 || s.group(addrs[0]) == g {
			t.Errorf("interval %v: groups %v", iv, s.p.groups)
		}
		s.advance(3 * max(iv, defaultCfg.Interval))
		ts := s.sendTimes(addrs[2])
		for i := 1; i < len(ts); i++ {
			if d := ts[i].Sub(ts[i-1]); d < min(iv, defaultCfg.Interval) {
				t.Errorf("interval %v → %v: probes %v apart", defaultCfg.Interval, iv, d)
			}
		}
		if d := ts[len(ts)-1].Sub(ts[len(ts)-2]); d != iv {
			t.Errorf("interval %v: the last probes %v apart", iv, d)
		}
		if len(s.takeChanges()) != 0 {
			t.Errorf("interval %v: a change of interval found addresses dead", iv)
		}
	}
}

// TestProberSetChurn: Set called again and again while the configuration
// changes quickly (addresses coming, going and coming back, intervals and
// multipliers changing, at any instant relative to the groups' probes)
// finds no answering address dead, and probes every address it keeps.
func TestProberSetChurn(t *testing.T) {
	pool := append(addrRange("10.0.0.1", 6), addrRange("2001:db8::1", 6)...)
	ivs := []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond}
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 1))
		s := newSim(t)
		s.rtt = time.Duration(100+r.IntN(3000)) * time.Microsecond
		var last []Target
		for range 25 {
			last = last[:0]
			for _, a := range pool {
				if r.IntN(4) == 0 {
					continue
				}
				cfg := defaultCfg
				if r.IntN(5) == 0 {
					cfg.Interval, cfg.Multiplier = ivs[r.IntN(len(ivs))], 1+r.IntN(4)
				}
				last = append(last, Target{Addr: a, Config: cfg})
			}
			s.p.Set(last)
			s.advance(time.Duration(r.IntN(300_000)) * time.Microsecond)
		}
		from := s.clock.Now()
		s.advance(time.Second)
		for _, c := range s.takeChanges() {
			t.Errorf("seed %d: %v found dead after %v while it answered", seed, c.Addr, c.Detection)
		}
		for _, tg := range last {
			if ts := s.sendTimes(tg.Addr); len(ts) == 0 || ts[len(ts)-1].Before(from) {
				t.Errorf("seed %d: %v not probed in the last second", seed, tg.Addr)
			}
		}
		if t.Failed() {
			return
		}
	}
}
