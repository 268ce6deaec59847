package main

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sllbrd/sllbrd/internal/liveness"
	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/model"
)

// endpointLiveness runs the SLLBR's own endpoint liveness checks
// (docs/liveness.md) as a producer of the reconcile loop's desired state:
// each configuration sets what the prober probes (every API-ready endpoint
// address of the Services whose liveness is on; an address of several
// Services once, with the stricter configuration), and the prober's dead
// set goes to the loop (SetDead), whose applier takes those endpoints out of
// this SLLBR's Maglev tables (withoutDead). Transitions are counted and
// reported (livenessEvents). A prober that fails is replaced (run). Its
// methods are safe for concurrent use.
type endpointLiveness struct {
	log     *slog.Logger
	open    func() (*liveness.Prober, error) // a new prober, reporting to changed
	setDead func(map[netip.Addr]bool)        // reconcile.Loop.SetDead
	events  *livenessEvents

	// mu serializes reading the prober's dead set and handing it to the
	// loop, so that an older read never overwrites a newer one, and guards
	// the prober (replaced when one fails) and what the last configuration
	// said.
	mu       sync.Mutex
	prober   *liveness.Prober
	targets  []liveness.Target
	services map[string]model.Liveness    // by Service name
	probed   map[netip.Addr][]endpointRef // the probed endpoints at each address
	past     liveness.Stats               // the counters of the probers replaced

	down, up              atomic.Uint64
	neededMoves, needless atomic.Uint64
	failures              atomic.Uint64 // probers that stopped on an error
}

// endpointRef is one endpoint (Service and identifier) at a probed address.
type endpointRef struct {
	service string
	id      int
}

var _ metrics.LivenessSource = (*endpointLiveness)(nil)

// newEndpointLiveness opens the prober's sockets in the calling thread's
// network namespace: an SLLBR that cannot probe does not start.
func newEndpointLiveness(log *slog.Logger, setDead func(map[netip.Addr]bool), events *livenessEvents) (*endpointLiveness, error) {
	e := &endpointLiveness{log: log, setDead: setDead, events: events}
	e.open = func() (*liveness.Prober, error) {
		p, err := liveness.New(liveness.WithLogger(log), liveness.WithOnChange(e.changed))
		if err != nil {
			return nil, fmt.Errorf("endpoint liveness: %w", err)
		}
		return p, nil
	}
	var err error
	e.prober, err = e.open()
	return e, err
}

// setState makes the prober follow st; call it before the loop gets st.
func (e *endpointLiveness) setState(st *model.State) {
	services, probed, targets := livenessTargets(st)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.services, e.probed, e.targets = services, probed, targets
	e.prober.Set(targets)
	// An address Set forgot leaves the dead set without a Change.
	e.setDead(e.prober.Dead())
}

// livenessTargets returns, for st, each Service's liveness configuration,
// the probed endpoints at each address (the API-ready endpoints of the
// Services whose liveness is on) and the prober's targets: one per probed
// endpoint (Prober.Set merges an address's with Config.Stricter).
func livenessTargets(st *model.State) (map[string]model.Liveness, map[netip.Addr][]endpointRef, []liveness.Target) {
	services := make(map[string]model.Liveness, len(st.Services))
	probed := map[netip.Addr][]endpointRef{}
	var targets []liveness.Target
	for _, svc := range st.Services {
		services[svc.Name] = svc.Liveness
		if svc.Liveness.Off() {
			continue
		}
		cfg := liveness.Config{Interval: svc.Liveness.Interval, Multiplier: svc.Liveness.Multiplier, HoldDown: svc.Liveness.HoldDown}
		for _, ep := range svc.Endpoints {
			if !ep.Ready {
				continue // the API keeps it out: nothing to check
			}
			a := ep.Addr.Unmap()
			probed[a] = append(probed[a], endpointRef{svc.Name, ep.ID})
			targets = append(targets, liveness.Target{Addr: a, Config: cfg})
		}
	}
	return services, probed, targets
}

// changed receives the prober's transitions (on its dispatcher goroutine).
func (e *endpointLiveness) changed(cs []liveness.Change) {
	for _, c := range cs {
		if c.Alive {
			e.up.Add(1)
		} else {
			e.down.Add(1)
		}
	}
	e.mu.Lock()
	e.setDead(e.prober.Dead())
	reports := make([]livenessReport, 0, len(cs))
	for _, c := range cs {
		for _, ref := range e.probed[c.Addr] {
			reports = append(reports, livenessReport{change: c, service: ref.service, id: ref.id, config: e.services[ref.service]})
		}
	}
	e.mu.Unlock()
	e.events.report(reports)
}

// observeMoves counts the table entries one liveness change moved.
func (e *endpointLiveness) observeMoves(m tableMoves) {
	e.neededMoves.Add(uint64(m.needed))
	e.needless.Add(uint64(m.needless))
}

// livenessView is what sllbrd show reads of the liveness checks at one
// moment.
type livenessView struct {
	services map[string]model.Liveness
	probed   map[netip.Addr][]endpointRef
	states   map[netip.Addr]liveness.State
}

// state returns the prober's state of a Service's endpoint address, if
// that endpoint is probed.
func (v livenessView) state(service string, a netip.Addr) (liveness.State, bool) {
	a = a.Unmap()
	if !slices.ContainsFunc(v.probed[a], func(r endpointRef) bool { return r.service == service }) {
		return liveness.State{}, false
	}
	s, ok := v.states[a]
	return s, ok
}

// view returns the configuration's Services and the prober's states now.
func (e *endpointLiveness) view() livenessView {
	e.mu.Lock()
	defer e.mu.Unlock()
	states := map[netip.Addr]liveness.State{}
	for _, s := range e.prober.States() {
		states[s.Addr] = s
	}
	return livenessView{services: e.services, probed: e.probed, states: states}
}

// LivenessEndpoints implements metrics.LivenessSource.
func (e *endpointLiveness) LivenessEndpoints() []metrics.LivenessEndpoint {
	v := e.view()
	var out []metrics.LivenessEndpoint
	for a, refs := range v.probed {
		s, ok := v.states[a]
		if !ok {
			continue // refused by the prober (logged)
		}
		for _, r := range refs {
			out = append(out, metrics.LivenessEndpoint{Service: r.service, ID: r.id, Address: a, Alive: s.Alive})
		}
	}
	slices.SortFunc(out, func(x, y metrics.LivenessEndpoint) int {
		return cmp.Or(cmp.Compare(x.Service, y.Service), cmp.Compare(x.ID, y.ID), x.Address.Compare(y.Address))
	})
	return out
}

// LivenessCounts implements metrics.LivenessSource.
func (e *endpointLiveness) LivenessCounts() metrics.LivenessCounts {
	e.mu.Lock()
	stats, states := addStats(e.past, e.prober.Stats()), e.prober.States()
	e.mu.Unlock()
	n := metrics.LivenessCounts{Prober: stats, Down: e.down.Load(), Up: e.up.Load(),
		NeededMoves: e.neededMoves.Load(), NeedlessMoves: e.needless.Load(), ProberFailures: e.failures.Load()}
	n.EventsRecorded, n.EventsLimited = e.events.counts()
	for _, s := range states {
		if s.Alive {
			n.Alive++
		} else {
			n.Dead++
		}
	}
	return n
}
