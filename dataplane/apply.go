package dataplane

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/fastpath"
	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/internal/tableroute"
	"github.com/sllbrd/sllbrd/model"
)

// RuleProgrammer programs the nftables rules (nft.Programmer).
type RuleProgrammer interface {
	Program(nft.Config) error
	Cleanup() error
	// Chains returns the chains of the table as it is, with their rules'
	// comments (nil when there is no table).
	Chains() (map[string][]string, error)
}

// RouteReconciler programs policy routing in two phases (route.Reconciler).
type RouteReconciler interface {
	Add(endpoints []route.EndpointRoute, paths []route.ReturnPath) error
	Prune(endpoints []route.EndpointRoute, paths []route.ReturnPath) error
	Cleanup() error
	// Gateways lists the hops of the gateway route in a table.
	Gateways(table uint32) ([]tableroute.Hop, error)
}

// Programmer applies configurations to the engine and the kernel, in the
// order that never routes a marked packet by the main table:
//
//  1. build the plan;
//  2. add the policy routes of its endpoints and of the return path, and of
//     the endpoints removed less than the grace period ago (route.Add; the
//     catch-all blackhole for the mark block is in place first);
//  3. commit the plan to the hot path (no new packet gets a removed mark;
//     the grace period of the routes removed by this plan starts);
//  4. program the VIP sets and queue rules (skipped while the catch-all is
//     not confirmed in place); with the kernel path, which decides most
//     packets in these rules, steps 3 and 4 swap once a plan is
//     committed: userspace follows the kernel's transaction as soon as it
//     commits, and keeps the previous plan if it fails; with the eBPF
//     datapath (WithBPFPath), which decides ahead of these rules, it is
//     programmed once they took the plan (what it punts finds them):
//     next hops, decision, attachments;
//  5. delete the routes not wanted any more (route.Prune): those of
//     endpoints whose grace period has ended, and leftovers of a previous
//     run on the first Apply (not while the rules or the eBPF datapath
//     failed to take the plan: they may still use those marks);
//  6. release the marks of removed endpoints whose routes are gone, so they
//     can be given to new endpoints.
//
// The grace period is the fragment lifetime (a later fragment reuses the
// mark of its first fragment that long) plus VerdictMargin. A removed
// endpoint that comes back within it keeps its mark. Applied.RetireAt says
// when Apply must run again to delete expired routes.
//
// It is the only writer to the kernel; its methods must not be called
// concurrently.
type Programmer struct {
	engine      *Engine
	rules       RuleProgrammer
	routes      RouteReconciler
	queues      nft.QueueRange
	fanout      bool
	returnTable uint32
	now         func() time.Time
	retired     retiredRoutes
	// kernel is set when packets are decided in the kernel (WithKernelPath
	// or WithBPFPath); bpf when the eBPF datapath decides ahead of it.
	kernel *kernelPath
	bpf    *bpfPath
}

// kernelPath is the kernel path's settings and its last programmed rules.
type kernelPath struct {
	maxPayloadOffset int
	programmed       atomic.Pointer[fastpath.Program] // read by scrapes
}

// FirstMark is the first endpoint fwmark: the first of
// route.DefaultRanges' mark block.
const FirstMark = 0x10000

// ReturnTable is the default routing table of the return path: the last
// table of route.DefaultRanges; endpoint marks (and their tables, equal to
// the marks) take the rest of the mark block.
const ReturnTable = 0x1ffff

// ProgrammerOption configures NewProgrammer.
type ProgrammerOption func(*Programmer)

// WithKernelPath decides packets in the kernel (package fastpath) and
// queues only what the kernel cannot decide. maxPayloadOffset is the
// largest transport offset the kernel's payload expression accepts
// (nft.ProbeKernelPath).
func WithKernelPath(maxPayloadOffset int) ProgrammerOption {
	return func(p *Programmer) { p.kernel = &kernelPath{maxPayloadOffset: maxPayloadOffset} }
}

// WithClock replaces time.Now for the grace periods.
func WithClock(now func() time.Time) ProgrammerOption {
	return func(p *Programmer) { p.now = now }
}

// NewProgrammer returns a Programmer for engine. The engine's marks must lie
// in the route reconciler's mark block and must not include returnTable.
func NewProgrammer(engine *Engine, rules RuleProgrammer, routes RouteReconciler, queues nft.QueueRange, fanout bool, returnTable uint32, opts ...ProgrammerOption) *Programmer {
	p := &Programmer{engine: engine, rules: rules, routes: routes, queues: queues, fanout: fanout, returnTable: returnTable,
		now: time.Now, retired: newRetiredRoutes(engine.fragmentLifetime + VerdictMargin)}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Applied describes what Apply programmed.
type Applied struct {
	Generation uint64
	VIPs       []netip.Addr // queued
	ServedVIPs []netip.Addr // queued and with a ready endpoint: safe to announce
	Endpoints  int
	Problems   []error // parts of the configuration left out
	// Userspace lists what the kernel path leaves to userspace because its
	// rules cannot express it (empty without the kernel path).
	Userspace []string
	// BPFPunted lists what the eBPF datapath leaves to the kernel path
	// (beyond its limits, or not expressible in it yet).
	BPFPunted []string
	// RetireAt is when the grace period of a removed endpoint's routes
	// ends: Apply must run again then to delete them (zero: none pending).
	RetireAt time.Time
}

// Apply programs st with gateways as the return path's next hops. On error
// the kernel may be partly updated (every step applies what it can); calling
// Apply again converges. The plan is committed whenever the routes it needs
// were attempted (with the kernel path, once a plan is live: when the
// kernel's rules took it), so the hot path never lags the kernel. Applied is filled
// in on error too; the caller decides what to announce then (sllbrd keeps
// announcing only VIPs it already announced).
func (p *Programmer) Apply(st *model.State, gateways []route.Nexthop) (Applied, error) {
	plan, err := p.engine.Build(st)
	if err != nil {
		return Applied{}, fmt.Errorf("build generation %d: %w", st.Generation, err)
	}
	applied := Applied{Generation: st.Generation, VIPs: plan.VIPs, ServedVIPs: plan.ServedVIPs,
		Endpoints: len(plan.Endpoints), Problems: plan.Problems}

	current, err := endpointRoutes(st.Gateway, plan.Endpoints)
	if err != nil {
		applied.Problems = append(applied.Problems, err)
	}
	endpoints := p.retired.program(current, p.now())
	paths := []route.ReturnPath{{VIPs: plan.VIPs, Table: p.returnTable, Gateways: gateways}}
	addErr := p.routes.Add(endpoints, paths)
	// With the kernel path, the kernel decides most packets and userspace
	// the rest (fragments, ICMP errors): userspace changes its decision
	// right after the kernel's transaction commits, not for the length of
	// that transaction before it, so a flow's two halves never follow two
	// tables; it keeps the previous plan, as the kernel does, when the
	// transaction fails. The first plan is committed first: the packets its
	// rules queue must find it.
	afterRules := p.kernel != nil && p.engine.snap.Load() != nil
	if !afterRules {
		p.commit(plan)
	}
	ruleErr, bpfErr := errNoCatchAll, error(nil)
	if !errors.Is(addErr, route.ErrNoCatchAll) {
		var in fastpath.Input
		in, ruleErr = p.programRules(plan, &applied)
		if ruleErr == nil && p.bpf != nil {
			applied.BPFPunted, bpfErr = p.programBPF(in, endpoints, routerInterfaces(st))
		}
	}
	if afterRules && ruleErr == nil {
		p.commit(plan)
	}
	applied.RetireAt = p.retired.next()
	var pruneErr error
	if (ruleErr == nil && bpfErr == nil) || p.kernel == nil {
		// The kernel path's maps, or the eBPF datapath's, may still use
		// the marks of removed endpoints when programming them failed:
		// their routes stay until they are programmed.
		pruneErr = p.routes.Prune(endpoints, paths)
		p.engine.releaseMarks(p.retired.holds)
	}
	return applied, errors.Join(wrap("policy routes", addErr), wrap("nftables", ruleErr), wrap("eBPF datapath", bpfErr), wrap("stale policy routes", pruneErr))
}

// routerInterfaces returns the interfaces of st's routers, where the
// eBPF datapath takes the packets to the VIPs.
func routerInterfaces(st *model.State) []string {
	var out []string
	for _, r := range st.Routers {
		if r.Interface != "" && !slices.Contains(out, r.Interface) {
			out = append(out, r.Interface)
		}
	}
	slices.Sort(out)
	return out
}

// commit makes plan the hot path's and starts the grace period of the
// routes it no longer uses.
func (p *Programmer) commit(plan *Plan) {
	p.engine.Commit(plan)
	p.retired.committed(p.now())
}

// programRules programs the VIP sets and queue rules, and with the kernel
// path its rules for plan, in one transaction; it returns the kernel
// path's input.
func (p *Programmer) programRules(plan *Plan, applied *Applied) (fastpath.Input, error) {
	cfg := nft.Config{VIPs: plan.VIPs, Queues: p.queues, Fanout: p.fanout}
	if p.kernel == nil {
		return fastpath.Input{}, p.rules.Program(cfg)
	}
	in := plan.kernelInput(p.kernel.maxPayloadOffset)
	compiled := fastpath.Compile(in)
	cfg.Kernel = compiled.Table
	applied.Userspace = compiled.Userspace
	if err := p.rules.Program(cfg); err != nil {
		return in, err
	}
	p.kernel.programmed.Store(compiled)
	return in, nil
}

// Adopt prepares a restart without loss: with the kernel path, it reads
// the rules a previous run left and gives the endpoint slots the marks
// those rules use, so that the first Apply changes only what differs. It
// must run before the first Apply; it returns the number of marks adopted.
func (p *Programmer) Adopt() (int, error) {
	if p.kernel == nil {
		return 0, nil
	}
	chains, err := p.rules.Chains()
	if err != nil {
		return 0, fmt.Errorf("read the rules left by a previous run: %w", err)
	}
	return p.engine.AdoptMarks(fastpath.AdoptedMarks(chains)), nil
}

// AdoptReturnPath returns the gateways a previous run left in the return
// table (after a crash, or --on-exit keep), each with the name of its
// interface; hops on an interface that is gone are left out. The first
// Apply replaces that route with the gateways it is given: a caller that
// gives these until its own sessions are up keeps the replies flowing
// through a restart.
func (p *Programmer) AdoptReturnPath() ([]route.Nexthop, error) {
	hops, err := p.routes.Gateways(p.returnTable)
	if err != nil {
		return nil, fmt.Errorf("read the return path left by a previous run: %w", err)
	}
	var out []route.Nexthop
	for _, h := range hops {
		ifc, err := net.InterfaceByIndex(int(h.IfIndex))
		if err != nil {
			continue
		}
		out = append(out, route.Nexthop{Addr: h.Gateway, Interface: ifc.Name})
	}
	return out, nil
}

// errNoCatchAll reports the queue rules left as they were.
var errNoCatchAll = errors.New("not updated: the catch-all blackhole rule is not in place")

// Cleanup detaches the eBPF datapath, then removes the rules, then every
// policy route and rule of ours.
func (p *Programmer) Cleanup() error {
	var bpfErr error
	if p.bpf != nil {
		bpfErr = p.bpf.AttachTo(nil)
	}
	return errors.Join(wrap("eBPF datapath", bpfErr), wrap("nftables", p.rules.Cleanup()), wrap("policy routes", p.routes.Cleanup()))
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
