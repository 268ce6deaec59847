package dataplane

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/model"
)

// RuleProgrammer programs the nftables rules (nft.Programmer).
type RuleProgrammer interface {
	Program(nft.Config) error
	Cleanup() error
}

// RouteReconciler programs policy routing (route.Reconciler).
type RouteReconciler interface {
	Reconcile(endpoints []route.EndpointRoute, paths []route.ReturnPath) error
}

// Programmer applies configurations to the engine and the kernel, in the
// order that never marks a packet for a missing route: build the plan;
// program the endpoints' policy routes and the return path; commit the plan
// to the hot path; program the VIP sets and queue rules. It is the only
// writer to the kernel; its methods must not be called concurrently.
type Programmer struct {
	engine      *Engine
	rules       RuleProgrammer
	routes      RouteReconciler
	queues      nft.QueueRange
	fanout      bool
	returnTable uint32
}

// ReturnTable is the default routing table of the return path: the last
// table of route.DefaultRanges; endpoint marks (and tables) take the rest.
const ReturnTable = 19999

// NewProgrammer returns a Programmer for engine. The engine's marks must lie
// in the route reconciler's ranges and must not include returnTable.
func NewProgrammer(engine *Engine, rules RuleProgrammer, routes RouteReconciler, queues nft.QueueRange, fanout bool, returnTable uint32) *Programmer {
	return &Programmer{engine: engine, rules: rules, routes: routes, queues: queues, fanout: fanout, returnTable: returnTable}
}

// Applied describes what Apply programmed.
type Applied struct {
	Generation uint64
	VIPs       []netip.Addr // queued
	ServedVIPs []netip.Addr // queued and with a ready endpoint: safe to announce
	Endpoints  int
	Problems   []error // parts of the configuration left out
}

// Apply programs st with gateways as the return path's next hops. On error
// the kernel may be partly updated (every step applies what it can); calling
// Apply again converges. The plan is committed whenever the routes it needs
// were attempted, so the hot path never lags the kernel. Applied is filled
// in on error too; the caller decides what to announce then (sllbrd keeps
// announcing only VIPs it already announced).
func (p *Programmer) Apply(st *model.State, gateways []route.Nexthop) (Applied, error) {
	plan, err := p.engine.Build(st)
	if err != nil {
		return Applied{}, fmt.Errorf("build generation %d: %w", st.Generation, err)
	}
	applied := Applied{Generation: st.Generation, VIPs: plan.VIPs, ServedVIPs: plan.ServedVIPs,
		Endpoints: len(plan.Endpoints), Problems: plan.Problems}

	endpoints, err := endpointRoutes(st.Gateway, plan.Endpoints)
	if err != nil {
		applied.Problems = append(applied.Problems, err)
	}
	paths := []route.ReturnPath{{VIPs: plan.VIPs, Table: p.returnTable, Gateways: gateways}}
	routeErr := p.routes.Reconcile(endpoints, paths)
	p.engine.Commit(plan)
	ruleErr := p.rules.Program(nft.Config{VIPs: plan.VIPs, Queues: p.queues, Fanout: p.fanout})
	return applied, errors.Join(wrap("policy routes", routeErr), wrap("nftables", ruleErr))
}

// Cleanup removes the rules; the caller removes routes with an empty Reconcile.
func (p *Programmer) Cleanup() error {
	return errors.Join(wrap("nftables", p.rules.Cleanup()), wrap("policy routes", p.routes.Reconcile(nil, nil)))
}

// endpointRoutes routes every endpoint slot through the Gateway's network
// interface towards the targets.
func endpointRoutes(gw model.Gateway, eps []EndpointMark) ([]route.EndpointRoute, error) {
	if len(eps) == 0 {
		return nil, nil
	}
	if len(gw.Networks) == 0 || gw.Networks[0].Interface == "" {
		return nil, fmt.Errorf("gateway %s/%s: no network interface towards the targets (annotation meridio-experiment/networks): endpoints unreachable", gw.Namespace, gw.Name)
	}
	iface := gw.Networks[0].Interface
	out := make([]route.EndpointRoute, 0, len(eps))
	for _, ep := range eps {
		out = append(out, route.EndpointRoute{Mark: ep.Mark, Table: ep.Mark, Via: ep.Addr, Interface: iface})
	}
	return out, nil
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
