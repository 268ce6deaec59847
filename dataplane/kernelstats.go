package dataplane

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/sllbrd/sllbrd/dataplane/bpfpath"
	"github.com/sllbrd/sllbrd/dataplane/fastpath"
	"github.com/sllbrd/sllbrd/dataplane/nft"
)

// KernelStats is the engine's counters with the kernel path's added, and
// the eBPF datapath's when there is one: the packets the kernel balanced
// count in the route and endpoint counters and as ReasonBalanced, under
// the same labels, so that the metrics are the same whichever path decided
// a packet. It implements what
// metrics.EngineCollector reads. Every call reads the kernel's counter
// objects (one netlink dump): a read counts every packet the kernel counted
// before it. (A cache of 20 ms, one read per scrape, returned the counts of
// the previous scrape when two came within 20 ms.)
type KernelStats struct {
	*Engine
	prog *Programmer
	read func() (map[string]nft.Count, error)

	mu     sync.Mutex
	routes map[[2]string]*monotonic // (route, service)
	eps    map[[3]string]*monotonic // (service, id, address)
	// The eBPF datapath's, under the same keys.
	bpfRoutes  map[[2]string]*monotonic
	bpfEps     map[[3]string]*monotonic
	bpfActions []bpfpath.Count // by bpfpath.Action, as last read
	balanced   Count
	failures   atomic.Uint64
}

// NewKernelStats returns the counters of engine and of prog's kernel path,
// read with read (nft.ReadCounters on a connection of its own).
func NewKernelStats(engine *Engine, prog *Programmer, read func() (map[string]nft.Count, error)) *KernelStats {
	return &KernelStats{Engine: engine, prog: prog, read: read,
		routes: map[[2]string]*monotonic{}, eps: map[[3]string]*monotonic{},
		bpfRoutes: map[[2]string]*monotonic{}, bpfEps: map[[3]string]*monotonic{}}
}

// ReadFailures counts the failed reads of the kernel's counters, the
// nftables' or the eBPF datapath's (the last counts read stay in use
// meanwhile).
func (k *KernelStats) ReadFailures() uint64 { return k.failures.Load() }

// ReasonCount adds the packets the kernel balanced to ReasonBalanced.
func (k *KernelStats) ReasonCount(r Reason) (packets, bytes uint64) {
	packets, bytes = k.Engine.ReasonCount(r)
	if r == ReasonBalanced {
		k.refresh()
		k.mu.Lock()
		packets, bytes = packets+k.balanced.Packets, bytes+k.balanced.Bytes
		k.mu.Unlock()
	}
	return packets, bytes
}

// EachRoute is Engine.EachRoute with the kernel's counts added.
func (k *KernelStats) EachRoute(f func(route, service string, c Count)) {
	k.refresh()
	k.mu.Lock()
	defer k.mu.Unlock()
	seen := map[[2]string]bool{}
	k.Engine.EachRoute(func(route, service string, c Count) {
		key := [2]string{route, service}
		seen[key] = true
		f(route, service, c.add(valueOf(k.routes, key)).add(valueOf(k.bpfRoutes, key)))
	})
	forget(k.routes, seen)
	forget(k.bpfRoutes, seen)
}

// EachEndpoint is Engine.EachEndpoint with the kernel's counts added.
func (k *KernelStats) EachEndpoint(f func(service string, id int, addr string, c Count)) {
	k.refresh()
	k.mu.Lock()
	defer k.mu.Unlock()
	seen := map[[3]string]bool{}
	k.Engine.EachEndpoint(func(service string, id int, addr string, c Count) {
		key := [3]string{service, strconv.Itoa(id), addr}
		seen[key] = true
		f(service, id, addr, c.add(valueOf(k.eps, key)).add(valueOf(k.bpfEps, key)))
	})
	forget(k.eps, seen)
	forget(k.bpfEps, seen)
}

// EachBPFAction calls f with what the eBPF datapath did with the packets
// it saw, per action (bpfpath.Action), as last read; nothing without one.
func (k *KernelStats) EachBPFAction(f func(action bpfpath.Action, c Count)) {
	k.refresh()
	k.mu.Lock()
	defer k.mu.Unlock()
	for a, c := range k.bpfActions {
		f(bpfpath.Action(a), Count{Packets: c.Packets, Bytes: c.Bytes})
	}
}

// valueOf is the count of key in ms (zero when it has none).
func valueOf[K comparable](ms map[K]*monotonic, key K) Count {
	if m := ms[key]; m != nil {
		return m.value
	}
	return Count{}
}

// unmark marks every count of ms not read yet in this refresh.
func unmark[K comparable](ms map[K]*monotonic) {
	for _, m := range ms {
		m.live = false
	}
}

// forget drops the counts that are gone from the engine (not in seen) and
// from the kernel (not read in the last refresh).
func forget[K comparable](ms map[K]*monotonic, seen map[K]bool) {
	for key, m := range ms {
		if !seen[key] && !m.live {
			delete(ms, key)
		}
	}
}

func (c Count) add(d Count) Count {
	return Count{Packets: c.Packets + d.Packets, Bytes: c.Bytes + d.Bytes}
}

// refresh reads the kernel's counters.
func (k *KernelStats) refresh() {
	k.mu.Lock()
	defer k.mu.Unlock()
	prog := k.prog.kernelProgram()
	if prog == nil {
		return
	}
	k.refreshBPF()
	defer k.sumBalanced()
	counts, err := k.read()
	if err != nil {
		k.failures.Add(1)
		return
	}
	unmark(k.routes)
	unmark(k.eps)
	for name, l := range prog.RouteCounters {
		observe(k.routes, [2]string{l.Route, l.Service}, name, counts)
	}
	for name, l := range prog.EndpointCounters {
		observe(k.eps, [3]string{l.Service, strconv.Itoa(l.ID), l.Addr.String()}, name, counts)
	}
}

// sumBalanced sums the endpoints' counts into the balanced reason.
func (k *KernelStats) sumBalanced() {
	k.balanced = Count{}
	for _, m := range k.eps {
		k.balanced = k.balanced.add(m.value)
	}
	for _, m := range k.bpfEps {
		k.balanced = k.balanced.add(m.value)
	}
}

// refreshBPF reads the eBPF datapath's counters, if there is one.
func (k *KernelStats) refreshBPF() {
	c, ok, err := k.prog.bpfCounters()
	if err != nil {
		k.failures.Add(1)
	}
	if !ok {
		return
	}
	k.bpfActions = append(k.bpfActions[:0], c.Actions[:]...)
	unmark(k.bpfRoutes)
	unmark(k.bpfEps)
	for l, n := range c.Routes {
		observeCount(k.bpfRoutes, [2]string{l.Route, l.Service}, "bpf", nft.Count{Packets: n.Packets, Bytes: n.Bytes})
	}
	for l, n := range c.Endpoints {
		observeCount(k.bpfEps, [3]string{l.Service, strconv.Itoa(l.ID), l.Addr.String()}, "bpf", nft.Count{Packets: n.Packets, Bytes: n.Bytes})
	}
}

func observe[K comparable](ms map[K]*monotonic, key K, name string, counts map[string]nft.Count) {
	if c, ok := counts[name]; ok {
		observeCount(ms, key, name, c)
	}
}

// observeCount records the reading c of the counter object name under key.
func observeCount[K comparable](ms map[K]*monotonic, key K, name string, c nft.Count) {
	m := ms[key]
	if m == nil {
		m = &monotonic{}
		ms[key] = m
	}
	m.observe(name, c)
}

// monotonic turns the readings of a kernel counter object, which restarts
// at zero when the object is created again (its route or endpoint left and
// came back), into a count that never decreases; it keeps its value while
// the object is gone.
type monotonic struct {
	name  string    // the object last read
	base  nft.Count // what earlier incarnations counted
	last  nft.Count // the last reading
	value Count     // base + last
	live  bool      // read in the last refresh
}

func (m *monotonic) observe(name string, c nft.Count) {
	if name != m.name || c.Packets < m.last.Packets || c.Bytes < m.last.Bytes {
		m.base.Packets += m.last.Packets
		m.base.Bytes += m.last.Bytes
		m.last = nft.Count{}
	}
	m.name, m.last, m.live = name, c, true
	m.value = Count{Packets: m.base.Packets + c.Packets, Bytes: m.base.Bytes + c.Bytes}
}

// kernelProgram returns the kernel path's last programmed rules (nil
// without the kernel path, or before the first Apply programmed them).
func (p *Programmer) kernelProgram() *fastpath.Program {
	if p.kernel == nil {
		return nil
	}
	return p.kernel.programmed.Load()
}

// RouteCount returns what the kernel path counted for route (of service)
// since this process started reading it: added to Engine.Inspect's route
// counts, it is what the route matched on both paths.
func (k *KernelStats) RouteCount(route, service string) Count {
	k.refresh()
	k.mu.Lock()
	defer k.mu.Unlock()
	key := [2]string{route, service}
	return valueOf(k.routes, key).add(valueOf(k.bpfRoutes, key))
}

// EndpointCount returns what the kernel path sent to endpoint id of service
// at addr, as RouteCount does for routes.
func (k *KernelStats) EndpointCount(service string, id int, addr string) Count {
	k.refresh()
	k.mu.Lock()
	defer k.mu.Unlock()
	key := [3]string{service, strconv.Itoa(id), addr}
	return valueOf(k.eps, key).add(valueOf(k.bpfEps, key))
}
