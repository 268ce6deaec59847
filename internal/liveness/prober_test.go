package liveness

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestProberDetectsAndRecovers: on the fake network, a target that stops
// answering is dead between Detection and Detection + Interval after it
// stopped, back after the hold-down once it answers again; the others never
// change.
func TestProberDetectsAndRecovers(t *testing.T) {
	s := newSim(t)
	cfg := Config{Interval: 200 * time.Millisecond, Multiplier: 4, HoldDown: time.Second}
	s.p.Set(targets(cfg, a4, b4, c6))
	s.advance(2 * time.Second)
	if cs := s.takeChanges(); len(cs) != 0 {
		t.Fatalf("answering targets changed: %+v", cs)
	}
	for _, st := range s.p.States() {
		if !st.Alive || st.RTT != s.rtt || st.LastReply.IsZero() || st.Transitions != 0 {
			t.Fatalf("state %+v", st)
		}
	}
	for _, victim := range []netip.Addr{a4, c6} {
		stop := s.clock.Now()
		s.down[victim] = true
		s.advance(cfg.Detection() + cfg.Interval + 10*time.Millisecond)
		cs := s.takeChanges()
		if len(cs) != 1 || cs[0].Addr != victim || cs[0].Alive {
			t.Fatalf("%v stopped: want it dead, got %+v", victim, cs)
		}
		took := cs[0].At.Sub(stop)
		if took < cfg.Detection() || took > cfg.Detection()+cfg.Interval {
			t.Errorf("%v dead %v after it stopped answering, want in [%v, %v]", victim, took, cfg.Detection(), cfg.Detection()+cfg.Interval)
		}
		if d := s.p.Dead(); len(d) != 1 || !d[victim] {
			t.Errorf("Dead() = %v", d)
		}
		back := s.clock.Now()
		s.down[victim] = false
		s.advance(cfg.HoldDown + 2*cfg.Interval)
		cs = s.takeChanges()
		if len(cs) != 1 || cs[0].Addr != victim || !cs[0].Alive {
			t.Fatalf("%v answers again: want it alive, got %+v", victim, cs)
		}
		if took := cs[0].At.Sub(back); took < cfg.HoldDown || took > cfg.HoldDown+cfg.Interval+s.rtt {
			t.Errorf("%v alive %v after it answered again, want in [%v, %v]", victim, took, cfg.HoldDown, cfg.HoldDown+cfg.Interval+s.rtt)
		}
	}
	if st := s.state(b4); st.Transitions != 0 || !st.Alive {
		t.Errorf("bystander %+v", st)
	}
	if st := s.state(a4); st.Transitions != 2 || !st.Alive {
		t.Errorf("victim %+v", st)
	}
	if st := s.p.Stats(); st.Ignored.Total() != 0 || st.RepliesValid == 0 || st.ProbesSent == 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestProberSpreadsProbes: 1,000 addresses added at once go out in bursts
// of at most maxGroup spread over the interval, each address exactly once
// per interval.
func TestProberSpreadsProbes(t *testing.T) {
	s := newSim(t)
	var addrs []netip.Addr
	base := netip.MustParseAddr("10.24.0.0")
	for a := base; len(addrs) < 1000; a = a.Next() {
		addrs = append(addrs, a)
	}
	s.p.Set(targets(defaultCfg, addrs...))
	start := s.clock.Now()
	s.advance(time.Second)
	// No burst: at most maxGroup probes go out together, and every 50 ms
	// carries its share.
	batches := map[time.Time]int{}
	const window = 50 * time.Millisecond
	bins := make([]int, time.Second/window)
	for _, r := range s.sent {
		batches[r.at]++
		bins[r.at.Sub(start)/window%time.Duration(len(bins))]++
	}
	for at, n := range batches {
		if n > maxGroup {
			t.Errorf("%d probes at once (%v), want at most %d", n, at.Sub(start), maxGroup)
		}
	}
	if want := len(addrs) / maxGroup * int(time.Second/defaultCfg.Interval); len(batches) < want {
		t.Errorf("%d bursts in 1 s, want at least %d", len(batches), want)
	}
	mean := len(addrs) * int(window) / int(defaultCfg.Interval)
	for i, n := range bins {
		if n < mean*85/100 || n > mean*115/100 {
			t.Errorf("%d probes in the %d-th %v, want %d±15%%", n, i, window, mean)
		}
	}
	for _, a := range addrs[:50] {
		ts := s.sendTimes(a)
		if len(ts) != 5 {
			t.Fatalf("%v probed %d times in 1 s (first after %v), want 5", a, len(ts), ts[0].Sub(start))
		}
		for i := 1; i < len(ts); i++ {
			if d := ts[i].Sub(ts[i-1]); d != defaultCfg.Interval {
				t.Errorf("%v probed %v apart", a, d)
			}
		}
	}
	t.Logf("%d bursts in 1 s; probes per %v: %v", len(batches), window, bins)
}

func TestProberSetAddRemoveReconfigure(t *testing.T) {
	s := newSim(t)
	cfg := Config{Interval: 100 * time.Millisecond, Multiplier: 2}
	s.p.Set(targets(cfg, a4, b4))
	s.advance(500 * time.Millisecond)
	s.down[a4] = true
	s.advance(400 * time.Millisecond)
	if cs := s.takeChanges(); len(cs) != 1 || cs[0].Addr != a4 || cs[0].Alive {
		t.Fatalf("want a4 dead: %+v", cs)
	}
	oldProbe := s.lastSent(a4)

	// a4 kept (its state too), c6 added alive.
	s.p.Set(targets(cfg, a4, b4, c6))
	if st := s.state(a4); st.Alive || st.Transitions != 1 {
		t.Errorf("kept address lost its state: %+v", st)
	}
	if st := s.state(c6); !st.Alive || st.Transitions != 0 || st.Since != s.clock.Now() {
		t.Errorf("new address: %+v", st)
	}

	// a4 removed: forgotten, no Change; a reply from it now is from an
	// address not probed.
	s.p.Set(targets(cfg, b4, c6))
	if len(s.p.States()) != 2 || len(s.p.Dead()) != 0 {
		t.Errorf("after removal: %+v dead %v", s.p.States(), s.p.Dead())
	}
	s.deliver(s.reply(a4, oldProbe.msg))
	if st := s.p.Stats(); st.Ignored.WrongSource != 1 {
		t.Errorf("reply from a removed address: %+v", st.Ignored)
	}

	// a4 added again: alive afresh; a reply to a probe of its former self
	// is an unknown sequence.
	s.down[a4] = false
	s.p.Set(targets(cfg, a4, b4, c6))
	if st := s.state(a4); !st.Alive || st.Transitions != 0 {
		t.Errorf("re-added: %+v", st)
	}
	s.deliver(s.reply(a4, oldProbe.msg))
	if st := s.p.Stats(); st.Ignored.UnknownSequence != 1 {
		t.Errorf("reply to the former address's probe: %+v", st.Ignored)
	}
	s.advance(300 * time.Millisecond)
	if cs := s.takeChanges(); len(cs) != 0 {
		t.Fatalf("Set emitted changes: %+v", cs)
	}

	// A shorter interval applies at once.
	fast := Config{Interval: 20 * time.Millisecond, Multiplier: 2}
	before := s.clock.Now()
	s.p.Set(append(targets(cfg, a4, c6), Target{b4, fast}))
	s.advance(200 * time.Millisecond)
	ts := s.sendTimes(b4)
	var after []time.Time
	for _, t := range ts {
		if t.After(before) {
			after = append(after, t)
		}
	}
	if len(after) < 8 || after[0].Sub(before) > 2*fast.Interval {
		t.Errorf("after the interval became %v: %d probes in 200 ms, first after %v", fast.Interval, len(after), after[0].Sub(before))
	}
	// And detection follows the new config.
	stop := s.clock.Now()
	s.down[b4] = true
	s.advance(100 * time.Millisecond)
	cs := s.takeChanges()
	if len(cs) != 1 || cs[0].Addr != b4 || cs[0].At.Sub(stop) > fast.Detection()+fast.Interval {
		t.Errorf("with %v: %+v", fast, cs)
	}
}

// TestProberValidatesReplies: every kind of invalid reply is counted
// under its reason and changes nothing; the valid reply it was made from
// is accepted.
func TestProberValidatesReplies(t *testing.T) {
	s := newSim(t)
	cfg := Config{Interval: 100 * time.Millisecond, Multiplier: 2}
	s.p.Set(targets(cfg, a4, b4, c6))
	s.advance(300 * time.Millisecond)
	s.down[a4], s.down[c6] = true, true
	s.advance(400 * time.Millisecond)
	if len(s.takeChanges()) != 2 {
		t.Fatal("want a4 and c6 dead")
	}
	stale4 := s.lastSent(a4) // older than Detection once the clock moves on
	s.advance(cfg.Detection() + time.Millisecond)
	s.deliver(s.reply(a4, stale4.msg))

	for _, victim := range []netip.Addr{a4, c6} {
		v6 := victim.Is6()
		probe := s.lastSent(victim)
		// Each case alters the probe; sim.reply turns it into a reply (with
		// a right ICMP checksum).
		mod := func(f func(msg []byte)) []byte {
			b := append([]byte{}, probe.msg...)
			f(b)
			return b
		}
		other := netip.MustParseAddr("192.0.2.77")
		bystander := b4 // probed, but not with this sequence number
		if v6 {
			other = netip.MustParseAddr("2001:db8::77")
			bystander = netip.MustParseAddr("2001:db8::4")
			s.p.Set(targets(cfg, a4, b4, c6, bystander))
		}
		cases := []struct {
			name   string
			src    netip.Addr
			msg    []byte
			reason func(Ignored) uint64
		}{
			{"foreign id", victim, mod(func(b []byte) { b[4] ^= 0xff }), func(i Ignored) uint64 { return i.ForeignID }},
			{"not probed", other, probe.msg, func(i Ignored) uint64 { return i.WrongSource }},
			{"another address's sequence", bystander, probe.msg, func(i Ignored) uint64 { return i.WrongSource }},
			{"sequence not sent", victim, mod(func(b []byte) { b[6] ^= 0x80 }), func(i Ignored) uint64 { return i.UnknownSequence }},
			{"other data", victim, mod(func(b []byte) { b[len(b)-1] ^= 1 }), func(i Ignored) uint64 { return i.PayloadMismatch }},
			{"short data", victim, probe.msg[:len(probe.msg)-1], func(i Ignored) uint64 { return i.PayloadMismatch }},
			{"code 1", victim, mod(func(b []byte) { b[1] = 1 }), func(i Ignored) uint64 { return i.Malformed }},
		}
		before := s.p.Stats().Ignored
		for _, c := range cases {
			prev := c.reason(s.p.Stats().Ignored)
			s.deliver(s.reply(c.src, c.msg))
			if got := c.reason(s.p.Stats().Ignored); got != prev+1 {
				t.Errorf("%v %s: not counted under its reason: %+v", victim, c.name, s.p.Stats().Ignored)
			}
		}
		if got := s.p.Stats().Ignored.Total() - before.Total(); got != uint64(len(cases)) {
			t.Errorf("%v: %d ignored, want %d", victim, got, len(cases))
		}
		// The request itself (echoed back unchanged) and a bad checksum.
		s.deliver(flying{v6: v6, src: victim, b: requestAsDelivered(victim, probe.msg)})
		if !v6 {
			bad := s.reply(victim, probe.msg)
			bad.b[len(bad.b)-1] ^= 1
			s.deliver(bad)
		}
		s.p.receive(s.clock.Now(), &s.echo, nil, -1, v6, victim) // truncated
		wantMalformed := uint64(3)
		if v6 {
			wantMalformed = 2
		}
		if got := s.p.Stats().Ignored.Malformed - before.Malformed; got != wantMalformed+1 { // and code 1
			t.Errorf("%v: %d malformed, want %d", victim, got, wantMalformed+1)
		}
		if st := s.state(victim); st.Alive || st.Transitions != 1 {
			t.Fatalf("%v revived by an invalid reply: %+v", victim, st)
		}
		valid := s.p.Stats().RepliesValid
		// The reply the cases were made from is valid: cfg has no
		// hold-down, so the target is alive at once. Its duplicate is not.
		s.deliver(s.reply(victim, probe.msg))
		if st := s.state(victim); !st.Alive || s.p.Stats().RepliesValid != valid+1 {
			t.Fatalf("%v: the genuine reply was refused: %+v %+v", victim, st, s.p.Stats())
		}
		unknown := s.p.Stats().Ignored.UnknownSequence
		s.deliver(s.reply(victim, probe.msg))
		if s.p.Stats().Ignored.UnknownSequence != unknown+1 {
			t.Errorf("%v: a duplicate reply was not refused", victim)
		}
	}
	if got := s.p.Stats().Ignored.UnknownSequence; got != 1+2+2 { // stale, 2 × not sent, 2 × duplicate
		t.Errorf("unknown sequences %d, want 5 (one stale reply)", got)
	}
}

// requestAsDelivered is the echo request msg (as sent) coming back from
// src unchanged, as a socket would deliver it.
func requestAsDelivered(src netip.Addr, msg []byte) []byte {
	if src.Is6() {
		return append([]byte{}, msg...)
	}
	return ipv4Packet(src, us, msg)
}

// TestProberSendErrorIsAMiss: an address the kernel refuses to send to is
// dead after its Detection; the error is counted and logged once.
func TestProberSendErrorIsAMiss(t *testing.T) {
	s := newSim(t)
	var logs logBuffer
	s.p.opts.logger = slog.New(slog.NewTextHandler(&logs, nil))
	cfg := Config{Interval: 100 * time.Millisecond, Multiplier: 3}
	s.p.Set(targets(cfg, a4, b4))
	s.advance(300 * time.Millisecond)
	s.sendErr[a4] = syscall.ENETUNREACH
	stop := s.clock.Now()
	s.advance(600 * time.Millisecond)
	cs := s.takeChanges()
	if len(cs) != 1 || cs[0].Addr != a4 || cs[0].Alive || cs[0].At.Sub(stop) > cfg.Detection()+cfg.Interval {
		t.Fatalf("want a4 dead within %v: %+v", cfg.Detection()+cfg.Interval, cs)
	}
	if st := s.p.Stats(); st.SendErrors < 6 || st.SendErrors > 7 {
		t.Errorf("send errors %d, want one per interval", st.SendErrors)
	}
	if n := strings.Count(logs.String(), "cannot send"); n != 1 {
		t.Errorf("logged %d times:\n%s", n, logs.String())
	}
	delete(s.sendErr, a4)
	s.advance(300 * time.Millisecond)
	if n := strings.Count(logs.String(), "sent again"); n != 1 || s.p.failing.Load() != 0 {
		t.Errorf("recovery logged %d times, failing %d:\n%s", n, s.p.failing.Load(), logs.String())
	}
}

// TestProberTargetsValidated: what cannot be probed is left out and
// logged; an address listed twice takes the stricter Config; an
// IPv4-mapped address is probed as IPv4.
func TestProberTargetsValidated(t *testing.T) {
	s := newSim(t)
	var logs logBuffer
	s.p.opts.logger = slog.New(slog.NewTextHandler(&logs, nil))
	slow := Config{Interval: time.Second, Multiplier: 3}
	s.p.Set([]Target{
		{netip.MustParseAddr("fe80::1%eth0"), defaultCfg},
		{netip.MustParseAddr("ff02::1"), defaultCfg},
		{netip.MustParseAddr("0.0.0.0"), defaultCfg},
		{netip.Addr{}, defaultCfg},
		{a4, Config{Interval: time.Millisecond, Multiplier: 3}},
		{b4, Config{Interval: 100 * time.Millisecond}},
		{netip.MustParseAddr("192.0.2.9"), Config{}}, // off: silently not probed
		{c6, slow},
		{c6, defaultCfg},
		{c6, slow},
		{netip.MustParseAddr("::ffff:192.0.2.5"), defaultCfg},
	})
	sts := s.p.States()
	if len(sts) != 2 || sts[0].Addr != netip.MustParseAddr("192.0.2.5") || sts[1].Addr != c6 {
		t.Fatalf("probed %+v", sts)
	}
	if got := s.p.byAddr[c6].cfg; got != defaultCfg {
		t.Errorf("c6 config %+v, want the stricter %+v", got, defaultCfg)
	}
	if n := strings.Count(logs.String(), "not probed"); n != 6 {
		t.Errorf("%d refusals logged, want 6:\n%s", n, logs.String())
	}
}

func TestConfigStricterAndValidate(t *testing.T) {
	off := Config{}
	fast := Config{Interval: 100 * time.Millisecond, Multiplier: 3}  // 300 ms
	slowI := Config{Interval: 300 * time.Millisecond, Multiplier: 1} // 300 ms, longer interval
	held := Config{Interval: 100 * time.Millisecond, Multiplier: 3, HoldDown: time.Second}
	for _, c := range []struct {
		a, b Config
		want bool
	}{
		{fast, off, true}, {off, fast, false}, {off, off, false},
		{fast, defaultCfg, true}, {defaultCfg, fast, false},
		{fast, slowI, true}, {slowI, fast, false},
		{held, fast, true}, {fast, held, false}, {fast, fast, false},
	} {
		if got := c.a.Stricter(c.b); got != c.want {
			t.Errorf("%+v.Stricter(%+v) = %v", c.a, c.b, got)
		}
	}
	if defaultCfg.Detection() != 800*time.Millisecond || !off.Off() || off.Validate() != nil || defaultCfg.Validate() != nil {
		t.Error("Detection, Off or Validate of the basics")
	}
	for _, bad := range []Config{
		{Interval: MinInterval - 1, Multiplier: 1}, {Interval: MaxInterval + 1, Multiplier: 1},
		{Interval: time.Second}, {Interval: time.Second, Multiplier: MaxMultiplier + 1},
		{Interval: time.Second, Multiplier: 1, HoldDown: -1}, {Interval: -time.Second, Multiplier: 1},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestDeliverBatches: changes pending together reach OnChange in one call,
// outside the prober's lock.
func TestDeliverBatches(t *testing.T) {
	var calls [][]Change
	var p *Prober
	p = newProber(time.Now, [32]byte{}, WithOnChange(func(cs []Change) {
		p.Set(nil) // would deadlock under the lock
		calls = append(calls, cs)
	}))
	e := &endpoint{addr: a4}
	p.mu.Lock()
	p.emit(e, Change{Alive: false})
	p.emit(&endpoint{addr: b4}, Change{Alive: false})
	p.mu.Unlock()
	p.notifyPending()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { p.dispatch(done) })
	close(done)
	wg.Wait()
	if len(calls) != 1 || len(calls[0]) != 2 || calls[0][0].Addr != a4 || calls[0][1].Addr != b4 {
		t.Fatalf("calls %+v", calls)
	}
}

// TestRunNeedsNew: a Prober without sockets does not run.
func TestRunNeedsNew(t *testing.T) {
	p := newProber(time.Now, [32]byte{})
	if err := p.Run(context.Background()); err == nil {
		t.Fatal("Run without sockets succeeded")
	}
}

// logBuffer is a bytes.Buffer safe for a slog handler.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
