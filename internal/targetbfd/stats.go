package targetbfd

import (
	"sync"
	"sync/atomic"

	"github.com/sllbrd/sllbrd/bfd"
)

// Stats is a snapshot of the target side's BFD, for metrics: gauges of the
// sessions now, and counts since the Counters were made.
type Stats struct {
	// Sessions counts the sessions by state, every state present.
	Sessions map[bfd.State]int
	// SocketErrors counts the sessions whose last attempt to open or write
	// their socket failed (bfd tries again every second).
	SocketErrors int
	// Unserved counts the next hops of Gateways with liveness that have no
	// session (Want.Unserved).
	Unserved int
	// LeftOut counts the next hops left out of their Gateway's routes
	// because they were found down (Gateway.Down, summed over Gateways).
	LeftOut int
	// AllDown counts the times a family of a Gateway had every next hop
	// found down, so that all were kept (Gateway.AllDown, counted when it
	// begins).
	AllDown uint64
	// ServerFailures counts servers that could not start in their
	// namespace or stopped on their own (each started again), and
	// namespaces that could not be opened for one (the node daemon).
	ServerFailures uint64
	// SessionFailures counts sessions the server refused to add, update or
	// remove (each tried again at the next Set).
	SessionFailures uint64
	// Up and Down count session transitions into and out of state Up.
	Up, Down uint64
	// Discards counts received packets that no session took: from an
	// address that is not a next hop (bfd.DiscardNoSession), malformed, ...
	Discards bfd.DiscardCounts
}

// Counters are the counts of one process's Runners (WithCounters): they
// only grow, also when a Runner ends. Safe for concurrent use.
type Counters struct {
	serverFailures, sessionFailures, up, down, allDown atomic.Uint64

	mu      sync.Mutex
	retired bfd.DiscardCounts // of servers that have stopped
}

// NewCounters returns zero counts.
func NewCounters() *Counters { return &Counters{} }

// CountServerFailure counts a server that could not be started, for a
// caller that runs Runners (the node daemon, when a pod's namespace cannot
// be opened).
func (c *Counters) CountServerFailure() { c.serverFailures.Add(1) }

// Stats returns the sessions of runners, which share c (WithCounters), and
// c's counts. A server stopping meanwhile is counted once.
func (c *Counters) Stats(runners ...*Runner) Stats {
	s := Stats{Sessions: map[bfd.State]int{bfd.StateAdminDown: 0, bfd.StateDown: 0, bfd.StateInit: 0, bfd.StateUp: 0},
		ServerFailures: c.serverFailures.Load(), SessionFailures: c.sessionFailures.Load(), Up: c.up.Load(), Down: c.down.Load(),
		AllDown: c.allDown.Load()}
	c.mu.Lock()
	defer c.mu.Unlock()
	s.Discards = c.retired
	for _, r := range runners {
		r.addLive(&s)
	}
	return s
}

// retire adds the discards of a server that stopped to the counts, and
// clears it from its runner, in one step for Stats.
func (c *Counters) retire(r *Runner, srv *bfd.Server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := srv.Discards()
	for i, n := range d {
		c.retired[i] += n
	}
	r.mu.Lock()
	r.srv = nil
	r.mu.Unlock()
}

// addLive adds the runner's current server to s; under its Counters' mu.
func (r *Runner) addLive(s *Stats) {
	r.mu.Lock()
	srv, unserved := r.srv, r.unserved
	for _, g := range r.want {
		s.LeftOut += len(g.Down)
	}
	r.mu.Unlock()
	s.Unserved += unserved
	if srv == nil {
		return
	}
	for _, st := range srv.AllStats() {
		s.Sessions[st.State]++
		if st.SocketError != "" {
			s.SocketErrors++
		}
	}
	d := srv.Discards()
	for i, n := range d {
		s.Discards[i] += n
	}
}
