package liveness

import (
	crand "crypto/rand"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// State is one probed address as the prober sees it.
type State struct {
	Addr        netip.Addr
	Alive       bool
	Since       time.Time // of the last transition, or when the address was added
	Transitions uint64
	LastReply   time.Time     // zero: none yet
	RTT         time.Duration // of the last valid reply
}

// Change is a transition of one address.
type Change struct {
	Addr  netip.Addr
	Alive bool
	At    time.Time // when it was decided
	// Detection: for a transition to dead, how long the address had been
	// silent (since its last valid reply, or since it was added or last
	// became alive if later): between Config.Detection() and Detection() +
	// Interval when probes went out on time. For a transition to alive,
	// how long replies had been coming, since the first valid reply of the
	// recovery (at least HoldDown).
	Detection time.Duration
}

// Option configures New.
type Option func(*options)

type options struct {
	logger   *slog.Logger
	onChange func([]Change)
}

// WithLogger sets where socket errors and refused targets are logged
// (default: discarded).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithOnChange sets the function that receives transitions. It is called
// from one goroutine of the prober (not the one sending probes), in order,
// never under a lock of the prober; changes decided together come in one
// call. A slow function delays later calls, not probing.
func WithOnChange(f func([]Change)) Option { return func(o *options) { o.onChange = f } }

// endpoint is one probed address. addr, v6 and the socket addresses are
// immutable once the endpoint is published; the rest is guarded by
// Prober.mu.
type endpoint struct {
	addr    netip.Addr
	sa      sockaddr
	cfg     Config
	slot    int32    // index in Prober.slots
	gen     uint32   // tells a reused slot's endpoints apart; never 0
	grp     groupKey // the addresses probed with it
	next    time.Time
	heapIdx int
	sendErr syscall.Errno // of the last send, logged when it changes
	m       machine
}

// seqRing is the number of sequence numbers remembered: all of them.
const seqRing = 1 << 16

// sentProbe is what the prober remembers of the probe sent with one
// sequence number.
type sentProbe struct {
	at    time.Duration // since Prober.epoch
	token uint64        // the probe's data
	slot  int32
	gen   uint32 // 0: free, or answered already
}

// Prober sends ICMP and ICMPv6 echo requests to a set of addresses and
// decides from the replies which are alive. See the package documentation.
type Prober struct {
	opts  options
	clock func() time.Time // time.Now; a fake in tests
	epoch time.Time
	id    uint16
	socks *sockets // nil in unit tests

	mu        sync.Mutex
	byAddr    map[netip.Addr]*endpoint
	slots     []*endpoint // by endpoint.slot; nil: free
	free      []int32
	gen       uint32
	sched     schedule
	groups    map[groupKey]int // addresses in each group
	groupMax  int              // maxGroup; tests compare with 1 (every address probed alone)
	ring      []sentProbe      // by sequence number
	seq       uint16
	rng       *rand.ChaCha8
	phaseFrac float64
	pending   []Change

	stats   counters
	failing atomic.Int64  // endpoints whose last send failed
	started atomic.Bool   // Run or Close was called
	done    chan struct{} // closed when Run has returned or Close closed the sockets
	notify  chan struct{} // pending has changes
}

// New returns a Prober with raw ICMPv4 and ICMPv6 sockets opened in the
// calling thread's network namespace (they stay there whichever goroutine
// runs the Prober). It fails with a clear error if a socket cannot be
// opened (no CAP_NET_RAW in the namespace's user namespace, ...), except
// that a kernel without IPv6 (EAFNOSUPPORT) leaves IPv6 unprobed: sending to
// an IPv6 address then fails, and it is found dead.
func New(opts ...Option) (*Prober, error) {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("liveness: random seed: %w", err)
	}
	p := newProber(time.Now, seed, opts...)
	socks, err := openSockets(p.opts.logger)
	if err != nil {
		return nil, err
	}
	p.socks = socks
	return p, nil
}

// newProber returns a Prober without sockets.
func newProber(clock func() time.Time, seed [32]byte, opts ...Option) *Prober {
	o := options{logger: slog.New(slog.DiscardHandler)}
	for _, f := range opts {
		f(&o)
	}
	p := &Prober{
		opts: o, clock: clock, epoch: clock(),
		byAddr: map[netip.Addr]*endpoint{},
		groups: map[groupKey]int{}, groupMax: maxGroup,
		ring:   make([]sentProbe, seqRing),
		rng:    rand.NewChaCha8(seed),
		notify: make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	r := p.rng.Uint64()
	p.id, p.seq = uint16(r), uint16(r>>16)
	p.phaseFrac = float64(r>>32) / (1 << 32)
	return p
}

// Set replaces the addresses to probe. An address already probed keeps its
// state (a new Config applies from its next probe); a new one starts alive
// and is first probed within an interval, with its group; an address left out
// is forgotten (no Change). Targets with Interval 0 are left out; invalid
// ones too, each logged. The same address twice: the stricter Config.
func (p *Prober) Set(targets []Target) {
	want := make(map[netip.Addr]Config, len(targets))
	for _, t := range targets {
		if t.Config.Off() {
			continue
		}
		t, err := t.normalize()
		if err != nil {
			p.opts.logger.Warn("liveness: target not probed", "err", err)
			continue
		}
		if c, ok := want[t.Addr]; !ok || t.Config.Stricter(c) {
			want[t.Addr] = t.Config
		}
	}
	p.mu.Lock()
	now := p.clock()
	for a, e := range p.byAddr {
		if _, ok := want[a]; !ok {
			p.forget(e)
		}
	}
	for _, a := range slices.SortedFunc(maps.Keys(want), netip.Addr.Compare) { // phases in address order
		if e := p.byAddr[a]; e != nil {
			p.reconfigure(e, want[a], now)
		} else {
			p.add(a, want[a], now)
		}
	}
	p.mu.Unlock()
	p.wake()
}

func (p *Prober) add(a netip.Addr, c Config, now time.Time) {
	p.gen++
	if p.gen == 0 {
		p.gen = 1
	}
	e := &endpoint{addr: a, sa: newSockaddr(a), cfg: c, gen: p.gen, m: newMachine(now)}
	p.place(e, now)
	if n := len(p.free); n > 0 {
		e.slot, p.free = p.free[n-1], p.free[:n-1]
		p.slots[e.slot] = e
	} else {
		e.slot = int32(len(p.slots))
		p.slots = append(p.slots, e)
	}
	p.byAddr[a] = e
	p.sched.add(e)
}

func (p *Prober) forget(e *endpoint) {
	if e.sendErr != 0 {
		p.failing.Add(-1)
	}
	p.sched.remove(e)
	p.leave(e)
	delete(p.byAddr, e.addr)
	p.slots[e.slot] = nil
	p.free = append(p.free, e.slot)
}

// reconfigure applies c to e. A new interval moves e to a group of that
// interval: its next probe comes no sooner than the shorter of the two
// intervals after its previous one (an interval shorter than both could
// end before a reply and count a miss), and for a shorter interval within
// two new intervals from now. A run of misses as long as a smaller
// Multiplier makes e dead at its next probe.
func (p *Prober) reconfigure(e *endpoint, c Config, now time.Time) {
	old := e.cfg.Interval
	e.cfg = c
	if c.Interval == old {
		return
	}
	from := e.next.Add(min(old, c.Interval) - old) // the previous probe, plus the shorter interval
	if from.Before(now) {
		from = now
	}
	p.leave(e)
	p.place(e, from)
	p.sched.fix(e)
}

// States returns a snapshot of every probed address, sorted by address.
func (p *Prober) States() []State {
	p.mu.Lock()
	out := make([]State, 0, len(p.byAddr))
	for _, e := range p.byAddr {
		out = append(out, State{Addr: e.addr, Alive: e.m.alive, Since: e.m.since,
			Transitions: e.m.transitions, LastReply: e.m.lastReply, RTT: e.m.rtt})
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b State) int { return a.Addr.Compare(b.Addr) })
	return out
}

// Dead returns the addresses currently dead.
func (p *Prober) Dead() map[netip.Addr]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[netip.Addr]bool{}
	for a, e := range p.byAddr {
		if !e.m.alive {
			out[a] = true
		}
	}
	return out
}

// Stats returns the counters.
func (p *Prober) Stats() Stats {
	s := p.stats.snapshot()
	if p.socks != nil {
		s.ReceiveDrops = p.socks.drops()
	}
	return s
}

// emit queues a change for the dispatcher (which logs it and calls the
// OnChange function). Called with p.mu held.
func (p *Prober) emit(e *endpoint, c Change) {
	c.Addr = e.addr
	p.pending = append(p.pending, c)
}
