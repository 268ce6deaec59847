package main

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sllbrd/sllbrd/internal/liveness"
	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/model"
)

// endpointLiveness runs the SLLBR's own endpoint liveness checks
// (docs/liveness.md) as a producer of the reconcile loop's desired state:
// each configuration sets what is probed (every API-ready endpoint address
// of the Services whose liveness is on; an address of several Services of
// one probe kind once, with the stricter configuration): by the ICMP prober
// for the Services whose probe is ICMP, by BFD sessions (bfdLiveness) for
// those whose probe is BFD. The union of the two dead sets goes to the loop
// (SetDead), whose applier takes those endpoints out of this SLLBR's Maglev
// tables (withoutDead): an address probed both ways is dead when either
// finds it dead. Transitions are counted and reported (livenessEvents). A
// prober that fails is replaced (run). Its methods are safe for concurrent
// use.
type endpointLiveness struct {
	log     *slog.Logger
	open    func() (*liveness.Prober, error) // a new prober, reporting to changed
	setDead func(map[netip.Addr]bool)        // reconcile.Loop.SetDead
	events  *livenessEvents
	bfd     *bfdLiveness // reporting to bfdChanged

	// mu serializes reading the prober's dead set and handing it to the
	// loop, so that an older read never overwrites a newer one, and guards
	// the prober (replaced when one fails) and what the last configuration
	// said.
	mu       sync.Mutex
	prober   *liveness.Prober
	targets  []liveness.Target            // the prober's
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
	e.bfd = newBFDLiveness(log, time.Now, e.bfdChanged)
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

// setState makes the prober and the BFD sessions follow st; call it before
// the loop gets st.
func (e *endpointLiveness) setState(st *model.State) {
	services, probed, targets := livenessTargets(st)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.services, e.probed, e.targets = services, probed, targets.icmp
	e.prober.Set(targets.icmp)
	e.bfd.set(targets.bfd, st.Routers, st.Gateway.Networks)
	// An address Set forgot leaves the dead set without a Change.
	e.publishLocked()
}

// publishLocked hands the loop the union of the prober's and the BFD
// sessions' dead sets. Called with e.mu held, so that an older union never
// overwrites a newer one.
func (e *endpointLiveness) publishLocked() {
	e.setDead(unionDead(e.prober.Dead(), e.bfd.dead()))
}

// unionDead returns the addresses dead in either set: an address probed by
// ICMP for a Service and by BFD for another is dead when either finds it
// dead. It may reuse icmp.
func unionDead(icmp, bfd map[netip.Addr]bool) map[netip.Addr]bool {
	if icmp == nil {
		icmp = make(map[netip.Addr]bool, len(bfd))
	}
	for a, dead := range bfd {
		if dead {
			icmp[a] = true
		}
	}
	return icmp
}

// probeTargets are the addresses to probe, one per probed endpoint, by
// probe kind (an address's are merged with Config.Stricter).
type probeTargets struct {
	icmp, bfd []liveness.Target
}

// livenessTargets returns, for st, each Service's liveness configuration,
// the probed endpoints at each address (the API-ready endpoints of the
// Services whose liveness is on) and the targets of each probe kind: one
// per probed endpoint.
func livenessTargets(st *model.State) (map[string]model.Liveness, map[netip.Addr][]endpointRef, probeTargets) {
	services := make(map[string]model.Liveness, len(st.Services))
	probed := map[netip.Addr][]endpointRef{}
	var targets probeTargets
	for _, svc := range st.Services {
		services[svc.Name] = svc.Liveness
		if svc.Liveness.Off() {
			continue
		}
		cfg := liveness.Config{Interval: svc.Liveness.Interval, Multiplier: svc.Liveness.Multiplier, HoldDown: svc.Liveness.HoldDown}
		kind := &targets.icmp
		if svc.Liveness.Probe == model.ProbeBFD {
			kind = &targets.bfd
		}
		for _, ep := range svc.Endpoints {
			if !ep.Ready {
				continue // the API keeps it out: nothing to check
			}
			a := ep.Addr.Unmap()
			probed[a] = append(probed[a], endpointRef{svc.Name, ep.ID})
			*kind = append(*kind, liveness.Target{Addr: a, Config: cfg})
		}
	}
	return services, probed, targets
}

// changed receives the prober's transitions (on its dispatcher goroutine).
func (e *endpointLiveness) changed(cs []liveness.Change) {
	bcs := make([]bfdChange, len(cs))
	for i, c := range cs {
		bcs[i].Change = c
	}
	e.transitions(model.ProbeICMP, bcs)
}

// bfdChanged receives the BFD sessions' transitions (on the BFD server's
// event goroutine or bfdLiveness.run's).
func (e *endpointLiveness) bfdChanged(cs []bfdChange) { e.transitions(model.ProbeBFD, cs) }

// transitions counts the transitions of one probe kind, hands the loop the
// new dead set and reports them for the endpoints of the Services probed
// that way.
func (e *endpointLiveness) transitions(probe model.Probe, cs []bfdChange) {
	for _, c := range cs {
		if c.Alive {
			e.up.Add(1)
		} else {
			e.down.Add(1)
		}
	}
	e.mu.Lock()
	e.publishLocked()
	reports := make([]livenessReport, 0, len(cs))
	for _, c := range cs {
		for _, ref := range e.probed[c.Addr] {
			if cfg := e.services[ref.service]; cfg.Probe == probe {
				reports = append(reports, livenessReport{change: c.Change, service: ref.service, id: ref.id, config: cfg,
					cause: c.cause, diag: c.diag})
			}
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
	services  map[string]model.Liveness
	probed    map[netip.Addr][]endpointRef
	states    map[netip.Addr]liveness.State // the prober's
	bfdStates map[netip.Addr]liveness.State // the BFD sessions'
}

// state returns the state of a Service's endpoint address, by the
// Service's probe kind, if that endpoint is probed.
func (v livenessView) state(service string, a netip.Addr) (liveness.State, bool) {
	a = a.Unmap()
	if !slices.ContainsFunc(v.probed[a], func(r endpointRef) bool { return r.service == service }) {
		return liveness.State{}, false
	}
	states := v.states
	if v.services[service].Probe == model.ProbeBFD {
		states = v.bfdStates
	}
	s, ok := states[a]
	return s, ok
}

// probe returns how a Service's endpoints are probed ("icmp", "bfd"), or ""
// when its liveness is off.
func (v livenessView) probe(service string) string {
	l := v.services[service]
	if l.Off() {
		return ""
	}
	return l.Probe.String()
}

// view returns the configuration's Services and the probes' states now.
func (e *endpointLiveness) view() livenessView {
	e.mu.Lock()
	defer e.mu.Unlock()
	states := map[netip.Addr]liveness.State{}
	for _, s := range e.prober.States() {
		states[s.Addr] = s
	}
	return livenessView{services: e.services, probed: e.probed, states: states, bfdStates: e.bfd.states()}
}

// LivenessEndpoints implements metrics.LivenessSource.
func (e *endpointLiveness) LivenessEndpoints() []metrics.LivenessEndpoint {
	v := e.view()
	var out []metrics.LivenessEndpoint
	for a, refs := range v.probed {
		for _, r := range refs {
			s, ok := v.state(r.service, a)
			if !ok {
				continue // refused by the prober or the BFD server (logged)
			}
			out = append(out, metrics.LivenessEndpoint{Service: r.service, ID: r.id, Address: a, Alive: s.Alive, Probe: v.probe(r.service)})
		}
	}
	slices.SortFunc(out, func(x, y metrics.LivenessEndpoint) int {
		return cmp.Or(cmp.Compare(x.Service, y.Service), cmp.Compare(x.ID, y.ID), x.Address.Compare(y.Address))
	})
	return out
}

// LivenessCounts implements metrics.LivenessSource. An address probed both
// ways counts once, dead when either probe finds it dead.
func (e *endpointLiveness) LivenessCounts() metrics.LivenessCounts {
	e.mu.Lock()
	stats, states := addStats(e.past, e.prober.Stats()), e.prober.States()
	bfdStates := e.bfd.states()
	e.mu.Unlock()
	n := metrics.LivenessCounts{Prober: stats, Down: e.down.Load(), Up: e.up.Load(), BFD: e.bfd.stats(),
		NeededMoves: e.neededMoves.Load(), NeedlessMoves: e.needless.Load(), ProberFailures: e.failures.Load()}
	n.EventsRecorded, n.EventsLimited = e.events.counts()
	alive := make(map[netip.Addr]bool, len(states)+len(bfdStates))
	for _, s := range states {
		alive[s.Addr] = s.Alive
	}
	for a, s := range bfdStates {
		if was, ok := alive[a]; !ok || was {
			alive[a] = s.Alive
		}
	}
	for _, ok := range alive {
		if ok {
			n.Alive++
		} else {
			n.Dead++
		}
	}
	return n
}
