package dataplane

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/sllbrd/sllbrd/dataplane/fastpath"
	"github.com/sllbrd/sllbrd/dataplane/nft"
)

// KernelStats is the engine's counters with the kernel path's added: the
// packets the kernel balanced count in the route and endpoint counters
// and as ReasonBalanced, under the same labels, so that the metrics are
// the same whichever path decided a packet. It implements what
// metrics.EngineCollector reads. Every call reads the kernel's counter
// objects (one netlink dump): a read counts every packet the kernel counted
// before it. (A cache of 20 ms, one read per scrape, returned the counts of
// the previous scrape when two came within 20 ms.)
type KernelStats struct {
	*Engine
	prog *Programmer
	read func() (map[string]nft.Count, error)

	mu       sync.Mutex
	routes   map[[2]string]*monotonic // (route, service)
	eps      map[[3]string]*monotonic // (service, id, address)
	balanced Count
	failures atomic.Uint64
}

// NewKernelStats returns the counters of engine and of prog's kernel path,
// read with read (nft.ReadCounters on a connection of its own).
func NewKernelStats(engine *Engine, prog *Programmer, read func() (map[string]nft.Count, error)) *KernelStats {
	return &KernelStats{Engine: engine, prog: prog, read: read,
		routes: map[[2]string]*monotonic{}, eps: map[[3]string]*monotonic{}}
}

// ReadFailures counts the failed reads of the kernel's counters (the last
// counts read stay in use meanwhile).
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
		if m := k.routes[key]; m != nil {
			c.Packets, c.Bytes = c.Packets+m.value.Packets, c.Bytes+m.value.Bytes
		}
		f(route, service, c)
	})
	for key := range k.routes {
		if !seen[key] && !k.routes[key].live {
			delete(k.routes, key) // gone from both
		}
	}
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
		if m := k.eps[key]; m != nil {
			c.Packets, c.Bytes = c.Packets+m.value.Packets, c.Bytes+m.value.Bytes
		}
		f(service, id, addr, c)
	})
	for key := range k.eps {
		if !seen[key] && !k.eps[key].live {
			delete(k.eps, key)
		}
	}
}

// refresh reads the kernel's counters.
func (k *KernelStats) refresh() {
	k.mu.Lock()
	defer k.mu.Unlock()
	prog := k.prog.kernelProgram()
	if prog == nil {
		return
	}
	counts, err := k.read()
	if err != nil {
		k.failures.Add(1)
		return
	}
	for _, m := range k.routes {
		m.live = false
	}
	for _, m := range k.eps {
		m.live = false
	}
	for name, l := range prog.RouteCounters {
		observe(k.routes, [2]string{l.Route, l.Service}, name, counts)
	}
	for name, l := range prog.EndpointCounters {
		observe(k.eps, [3]string{l.Service, strconv.Itoa(l.ID), l.Addr.String()}, name, counts)
	}
	k.balanced = Count{}
	for _, m := range k.eps {
		k.balanced.Packets += m.value.Packets
		k.balanced.Bytes += m.value.Bytes
	}
}

func observe[K comparable](ms map[K]*monotonic, key K, name string, counts map[string]nft.Count) {
	c, ok := counts[name]
	if !ok {
		return
	}
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
	if m := k.routes[[2]string{route, service}]; m != nil {
		return m.value
	}
	return Count{}
}

// EndpointCount returns what the kernel path sent to endpoint id of service
// at addr, as RouteCount does for routes.
func (k *KernelStats) EndpointCount(service string, id int, addr string) Count {
	k.refresh()
	k.mu.Lock()
	defer k.mu.Unlock()
	if m := k.eps[[3]string{service, strconv.Itoa(id), addr}]; m != nil {
		return m.value
	}
	return Count{}
}
