package liveness

import (
	"errors"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// schedSlack is what the bounds on measured times allow beyond the state
// machine's own (the loop and the test may wait for a CPU on this shared
// 2-core machine while other test binaries run).
const schedSlack = 150 * time.Millisecond

// TestIntegrationProber runs a Prober in a namespace of its own against
// three target namespaces on a bridge, both families: all alive; one
// target's link set down and another's namespace dropping all input are
// dead within Detection + Interval, while forged and foreign replies
// change nothing; both back alive after the hold-down; the third target
// never changes.
func TestIntegrationProber(t *testing.T) {
	l := newProbeLab(t, 3)
	t1, t2, t3 := l.targets[0], l.targets[1], l.targets[2]
	var log changeLog
	p := startProber(t, l.p, WithOnChange(log.add))
	cfg := Config{Interval: 200 * time.Millisecond, Multiplier: 4, HoldDown: time.Second}
	var ts []Target
	for _, tg := range l.targets {
		ts = append(ts, Target{tg.v4, cfg}, Target{tg.v6, cfg})
	}
	p.Set(ts)

	// All alive.
	time.Sleep(cfg.Detection() + 3*cfg.Interval)
	if cs := log.all(); len(cs) != 0 {
		t.Fatalf("answering targets changed: %+v", cs)
	}
	for _, st := range p.States() {
		if !st.Alive || st.LastReply.IsZero() || st.RTT <= 0 || st.RTT > 50*time.Millisecond {
			t.Fatalf("state %+v", st)
		}
	}
	t.Logf("all alive: %+v", p.Stats())

	// Foreign messages: echo requests to the prober's namespace (the
	// sockets' filters keep them out: not even counted), another process
	// pinging, and replies crafted in a target namespace with another
	// identifier, a sequence number never sent, a bad ICMP checksum.
	before := p.Stats()
	netns.In(t, t3.ns, "ping", "-c", "3", "-i", "0.2", "-W", "1", labP4.String())
	netns.In(t, t3.ns, "ping", "-6", "-c", "3", "-i", "0.2", "-W", "1", labP6.String())
	netns.In(t, l.p, "ping", "-c", "3", "-i", "0.2", "-W", "1", t3.v4.String())
	netns.In(t, l.p, "ping", "-6", "-c", "3", "-i", "0.2", "-W", "1", t3.v6.String())
	p.mu.Lock()
	id, unsent := p.id, p.seq+30000
	p.mu.Unlock()
	for _, dst := range []netip.Addr{labP4, labP6} {
		sendICMP(t, t3.ns, dst, echoReply(dst.Is6(), id+1, 1, 0))
		sendICMP(t, t3.ns, dst, echoReply(dst.Is6(), id, unsent, 0))
	}
	bad := echoReply(false, id, 1, 0)
	bad[2] ^= 0xff
	sendICMP(t, t3.ns, labP4, bad)
	waitStats(t, p, "foreign replies", func(s Stats) bool {
		return s.Ignored.ForeignID == before.Ignored.ForeignID+6+2 &&
			s.Ignored.UnknownSequence == before.Ignored.UnknownSequence+2 &&
			s.Ignored.Malformed == before.Ignored.Malformed+1
	})

	// t1's link down, t2 drops everything.
	downAt := time.Now()
	netns.Run(t, "ip", "-n", t1.ns, "link", "set", "eth0", "down")
	dropAt := time.Now()
	netns.In(t, t2.ns, "nft", "add table inet drop-all; add chain inet drop-all in { type filter hook input priority 0; policy drop; }")
	for _, ev := range []labEvent{{"link down", t1, downAt}, {"namespace drops all", t2, dropAt}} {
		// From its last answered probe, which may have left up to an
		// interval before the event, Multiplier more intervals (less the
		// round trip of a probe lost in flight).
		ev.expect(t, &log, false, 0, cfg.Detection()-10*time.Millisecond, cfg.Detection()+cfg.Interval, cfg.Detection(), "detection")
	}
	if d := p.Dead(); len(d) != 4 || !d[t1.v4] || !d[t1.v6] || !d[t2.v4] || !d[t2.v6] {
		t.Errorf("Dead() = %v", d)
	}

	// While t1 is dead, t3 sends replies to t1's probes: from its own
	// address, and forged with t1's address but not the probe's data, and
	// (IPv6) with the probe's data but a bad checksum, which the kernel
	// drops. t1 stays dead through more than its hold-down.
	before = p.Stats()
	const rounds = 12
	for range rounds {
		for _, pair := range [][2]netip.Addr{{t1.v4, labP4}, {t1.v6, labP6}} {
			victim, dst := pair[0], pair[1]
			seq, token := lastUnanswered(t, p, victim)
			sendICMP(t, t3.ns, dst, echoReply(victim.Is6(), id, seq, token))
			spoof(t, t3.ns, victim, dst, echoReply(victim.Is6(), id, seq, token+1), false)
			if victim.Is6() {
				spoof(t, t3.ns, victim, dst, echoReply(true, id, seq, token), true)
			}
		}
		time.Sleep(cfg.HoldDown / rounds * 3 / 2)
	}
	waitStats(t, p, "forged replies", func(s Stats) bool {
		return s.Ignored.WrongSource == before.Ignored.WrongSource+2*rounds &&
			s.Ignored.PayloadMismatch == before.Ignored.PayloadMismatch+2*rounds &&
			s.ReceiveDrops == before.ReceiveDrops+rounds // the bad IPv6 checksums, dropped by the kernel
	})
	if after := p.Stats(); after.Ignored.Total()-before.Ignored.Total() != 4*rounds {
		t.Errorf("forged replies: before %+v after %+v", before, after)
	}
	for _, st := range p.States() {
		if (st.Addr == t1.v4 || st.Addr == t1.v6) && (st.Alive || st.LastReply.After(downAt)) {
			t.Fatalf("forged replies accepted: %+v", st)
		}
	}

	// Both back: alive after the hold-down.
	mark := len(log.all())
	upAt := time.Now()
	netns.Run(t, "ip", "-n", t1.ns, "link", "set", "eth0", "up")
	acceptAt := time.Now()
	netns.In(t, t2.ns, "nft", "delete table inet drop-all")
	for _, ev := range []labEvent{{"link up", t1, upAt}, {"namespace accepts", t2, acceptAt}} {
		// The first reply within an interval, alive at the first reply
		// once HoldDown has passed since: within another interval.
		ev.expect(t, &log, true, mark, cfg.HoldDown, cfg.HoldDown+2*cfg.Interval, cfg.HoldDown, "hold-down")
	}

	// Exactly two transitions for each address of t1 and t2, none for t3.
	time.Sleep(2 * cfg.Interval)
	for _, st := range p.States() {
		want := uint64(2)
		if st.Addr == t3.v4 || st.Addr == t3.v6 {
			want = 0
		}
		if st.Transitions != want || !st.Alive {
			t.Errorf("%v: %d transitions (alive %v), want %d", st.Addr, st.Transitions, st.Alive, want)
		}
	}
	if st := p.Stats(); st.ReceiveErrors != 0 {
		t.Errorf("receive errors: %+v", st)
	}
	t.Logf("stats %+v", p.Stats())
}

// TestIntegrationNewWithoutNetRaw: without CAP_NET_RAW, New fails and says
// why.
func TestIntegrationNewWithoutNetRaw(t *testing.T) {
	require.Root(t)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with its reduced capabilities
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			errc <- err
			return
		}
		data[0].Effective &^= 1 << unix.CAP_NET_RAW
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			errc <- err
			return
		}
		p, err := New()
		if err == nil {
			p.Close()
			err = errors.New("New succeeded")
		}
		errc <- err
	}()
	err := <-errc
	if !errors.Is(err, unix.EPERM) || !strings.Contains(err.Error(), "CAP_NET_RAW") {
		t.Fatalf("New without CAP_NET_RAW: %v", err)
	}
	t.Logf("%v", err)
}

// TestIntegrationAllocatesNothing pins the steady state with real sockets
// (probes to loopback in a fresh namespace): sending probes and reading
// valid replies allocate nothing. A fake clock makes every pass probe.
func TestIntegrationAllocatesNothing(t *testing.T) {
	ns, _ := netns.New(t, "sllbrd-live-alloc")
	netns.Run(t, "ip", "-n", ns, "link", "set", "lo", "up")
	var p *Prober
	netns.DoOrFail(t, ns, func() (err error) {
		p, err = New()
		return err
	})
	t.Cleanup(func() { p.socks.close() })
	clock := &fakeClock{t: time.Now()}
	p.clock = clock.Now
	cfg := Config{Interval: 100 * time.Millisecond, Multiplier: 3}
	p.Set(targets(cfg, netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()))
	l := p.newLoop()
	pass := func() {
		clock.Advance(cfg.Interval)
		want := p.stats.valid.Load() + 2
		l.sendDue()
		for p.stats.valid.Load() < want {
			if err := l.poll(time.Time{}); err != nil {
				t.Fatal(err)
			}
			l.readAll()
		}
	}
	for range 20 {
		pass() // steady state
	}
	if allocs := testing.AllocsPerRun(200, pass); allocs != 0 {
		t.Errorf("%v allocations per pass (2 probes sent, 2 replies read), want 0", allocs)
	}
	if st := p.Stats(); st.ProbesSent != st.RepliesValid || st.RepliesValid < 2*200 || st.Ignored.Total() != 0 || st.SendErrors != 0 {
		t.Errorf("stats %+v", st)
	}
}

// labEvent is something a test did to a target at a time.
type labEvent struct {
	name string
	tg   labTarget
	at   time.Time
}

// expect waits for both of the target's addresses to become alive (from
// the change log's index from on) and checks each took [lo, hi] (plus
// schedSlack) from the event, logging it as a ratio of ref.
func (ev labEvent) expect(t *testing.T, log *changeLog, alive bool, from int, lo, hi, ref time.Duration, refName string) {
	t.Helper()
	for _, a := range []netip.Addr{ev.tg.v4, ev.tg.v6} {
		ch := log.wait(t, a, alive, from, hi+2*time.Second)
		took := ch.At.Sub(ev.at)
		t.Logf("%s: %v %s after %v = %.2f × %s %v (Change.Detection %v)", ev.name, a, aliveWord(alive),
			took.Round(time.Millisecond), float64(took)/float64(ref), refName, ref, ch.Detection.Round(time.Millisecond))
		if took < lo || took > hi+schedSlack {
			t.Errorf("%s: %v %s after %v, want within [%v, %v] (+%v slack)", ev.name, a, aliveWord(alive), took, lo, hi, schedSlack)
		}
	}
}

// TestIntegrationOutOfDescriptors: while the process has no descriptor to
// spare (RLIMIT_NOFILE 0, where ppoll fails with EINVAL), the prober keeps
// reading its sockets: no answering address is found dead, and replies
// keep counting.
func TestIntegrationOutOfDescriptors(t *testing.T) {
	l := newProbeLab(t, 1)
	var log changeLog
	p := startProber(t, l.p, WithOnChange(log.add))
	cfg := Config{Interval: 100 * time.Millisecond, Multiplier: 3, HoldDown: time.Second}
	tg := l.targets[0]
	p.Set([]Target{{tg.v4, cfg}, {tg.v6, cfg}})
	time.Sleep(cfg.Detection())

	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = 0
	before := p.Stats()
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * cfg.Detection())
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	after := p.Stats()
	if cs := log.all(); len(cs) != 0 {
		t.Errorf("addresses changed while out of descriptors: %+v", cs)
	}
	if after.ReceiveErrors <= before.ReceiveErrors {
		t.Errorf("ppoll never failed under RLIMIT_NOFILE 0 (the test tests nothing): %+v", after)
	}
	if got, min := after.RepliesValid-before.RepliesValid, uint64(2*3*4)/2; got < min {
		t.Errorf("%d valid replies while out of descriptors, want at least %d", got, min)
	}
	for _, st := range p.States() {
		if !st.Alive {
			t.Errorf("state %+v", st)
		}
	}
}
