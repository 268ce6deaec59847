package dataplane

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/classify"
	"github.com/sllbrd/sllbrd/dataplane/fragment"
	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/maglev"
)

// snapshot is everything Decide reads; immutable once published.
type snapshot struct {
	generation uint64
	routes     *classify.Table
	perRoute   []routeTarget // indexed like routes
	services   map[string]*serviceTable
}

// routeTarget is what a matched route leads to.
type routeTarget struct {
	counterID uint16
	service   *serviceTable // nil: the route's Service does not exist
}

// serviceTable is one Service's Maglev tables (one per address family, so a
// flow only reaches an endpoint with an address of its family) and its
// slots' marks.
type serviceTable struct {
	name          string
	maxEndpoints  int
	marks         []uint32 // slot -> fwmark, shared by both families
	sctpPortsOnly bool
	ipv4, ipv6    familyTable
}

// familyTable balances one address family of a Service.
type familyTable struct {
	active     []bool // slot -> a ready endpoint of this family
	table      *maglev.Table
	endpoints  []bool   // slot -> an endpoint of this family, ready or not
	counterIDs []uint16 // slot -> the endpoint's counter
}

func (s *serviceTable) family(is4 bool) *familyTable {
	if is4 {
		return &s.ipv4
	}
	return &s.ipv6
}

// Engine makes the per-packet decision. Create it with NewEngine.
type Engine struct {
	snap      atomic.Pointer[snapshot]
	fragments *fragment.Table

	// Per-packet counters, one shard per Decision (see counter.go).
	shards           []engineShard
	shardMask        uint32
	decodeErrors     []error // index -> engineShard.decodeErrors
	routeCounters    *counterSet
	endpointCounters *counterSet

	mu    sync.Mutex // serialises Build and Commit
	marks markPlan   // committed marks

	fragmentLifetime time.Duration // how long a first fragment's mark is reused
}

type options struct {
	markFirst, markCount uint32
	fragmentCapacity     int
	fragmentLifetime     time.Duration
}

// Option configures an Engine.
type Option func(*options)

// WithMarks sets the fwmark range endpoints take their marks from
// (default 0x10000..0x1fffe: route.DefaultRanges' mark block less its last
// mark, ReturnTable, which is a table, not a mark). The range must lie in
// the route reconciler's mark block.
func WithMarks(first, count uint32) Option {
	return func(o *options) { o.markFirst, o.markCount = first, count }
}

// WithFragments sizes the fragment table (default 16384 datagrams, 2 s).
func WithFragments(capacity int, lifetime time.Duration) Option {
	return func(o *options) { o.fragmentCapacity, o.fragmentLifetime = capacity, lifetime }
}

// NewEngine returns an engine that drops everything until the first Commit.
func NewEngine(opts ...Option) *Engine {
	o := options{markFirst: FirstMark, markCount: ReturnTable - FirstMark, fragmentCapacity: 16384, fragmentLifetime: 2 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	if o.fragmentLifetime <= 0 {
		o.fragmentLifetime = 2 * time.Second // what the fragment table uses then
	}
	shards := shardCount()
	// Counters of removed routes and endpoints, like their marks, live on
	// for the grace period: a fragment table entry keeps their ids for one
	// lifetime after a decision made, at the latest, just before a commit.
	grace := o.fragmentLifetime + VerdictMargin
	e := &Engine{
		fragments:        fragment.New(o.fragmentCapacity, fragment.WithLifetime(o.fragmentLifetime)),
		shards:           make([]engineShard, shards),
		shardMask:        uint32(shards - 1),
		decodeErrors:     packet.Errors(),
		routeCounters:    newCounterSet(shards, grace),
		endpointCounters: newCounterSet(shards, grace),
		marks:            newMarkPlan(o.markFirst, o.markCount),
		fragmentLifetime: o.fragmentLifetime,
	}
	if len(e.decodeErrors) > maxDecodeErrors {
		panic("dataplane: maxDecodeErrors is smaller than packet.Errors()")
	}
	return e
}

// Generation returns the generation of the committed configuration (0: none).
func (e *Engine) Generation() uint64 {
	if s := e.snap.Load(); s != nil {
		return s.generation
	}
	return 0
}

// Expire drops held fragments whose first fragment did not come in time: it
// appends their tokens to drop for the caller to give a Drop verdict. Call
// it a few times a second. FragmentStats counts them as Expired.
func (e *Engine) Expire(now time.Time, drop []uint64) []uint64 {
	return e.fragments.Expire(now, drop)
}

// FragmentStats returns the fragment table's counters.
func (e *Engine) FragmentStats() fragment.Stats { return e.fragments.Stats() }

// EndpointMark is one endpoint slot and the fwmark it is routed by.
type EndpointMark struct {
	Service string
	ID      int
	Addr    netip.Addr
	Ready   bool
	Mark    uint32
}
