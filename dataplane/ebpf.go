package dataplane

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync/atomic"

	"github.com/sllbrd/sllbrd/dataplane/bpfpath"
	"github.com/sllbrd/sllbrd/dataplane/fastpath"
	"github.com/sllbrd/sllbrd/dataplane/route"
)

// BPFPath is the eBPF datapath as the Programmer drives it (NewBPFPath
// adapts a loaded *bpfpath.Datapath). Its methods are called from the
// Programmer only, Counters also from scrapes.
type BPFPath interface {
	// Configure makes in the program's decision; it returns what the
	// program leaves to the nftables path (bpfpath.Report.Userspace).
	Configure(in fastpath.Input) (punted []string, err error)
	// SetNextHops makes eps the program's next hops: the packets it
	// decides for an endpoint go to the next hop of that endpoint's
	// policy route.
	SetNextHops(eps []route.EndpointRoute) error
	// AttachTo attaches the program to exactly the interfaces named:
	// those attached and not named are detached.
	AttachTo(ifnames []string) error
	// Counters reads the program's counters.
	Counters() (bpfpath.Counts, error)
}

// WithBPFPath decides packets in the eBPF datapath bpf, attached to the
// interfaces towards the gateway routers, ahead of the kernel path (which
// it implies, with maxPayloadOffset as in WithKernelPath): what the program
// does not decide goes on to the kernel path's rules, and what those
// cannot to userspace.
func WithBPFPath(bpf BPFPath, maxPayloadOffset int) ProgrammerOption {
	return func(p *Programmer) {
		p.kernel = &kernelPath{maxPayloadOffset: maxPayloadOffset}
		p.bpf = &bpfPath{BPFPath: bpf}
	}
}

// bpfPath is the eBPF datapath and whether it has been configured.
type bpfPath struct {
	BPFPath
	configured atomic.Bool // a Configure succeeded: its counters are live
}

// programBPF programs the eBPF datapath after the kernel path's rules took
// in (what it punts finds them): the next hops first, with those of the
// endpoints in their grace period (a packet decided with the previous
// tables may still name them), then the decision, then the interfaces of
// st's routers. It returns what the program leaves to the kernel path.
func (p *Programmer) programBPF(in fastpath.Input, eps []route.EndpointRoute, routers []string) ([]string, error) {
	if err := p.bpf.SetNextHops(eps); err != nil {
		return nil, fmt.Errorf("next hops: %w", err)
	}
	punted, err := p.bpf.Configure(in)
	if err != nil {
		return nil, fmt.Errorf("configure: %w", err)
	}
	p.bpf.configured.Store(true)
	if err := p.bpf.AttachTo(routers); err != nil {
		return punted, fmt.Errorf("attach: %w", err)
	}
	return punted, nil
}

// bpfCounters reads the eBPF datapath's counters; ok is false without one,
// or before it was first configured.
func (p *Programmer) bpfCounters() (c bpfpath.Counts, ok bool, err error) {
	if p.bpf == nil || !p.bpf.configured.Load() {
		return bpfpath.Counts{}, false, nil
	}
	c, err = p.bpf.Counters()
	return c, err == nil, err
}

// NewBPFPath adapts d to BPFPath: next hops take their interface's index
// and MTU from the calling thread's network namespace at each call.
func NewBPFPath(d *bpfpath.Datapath) BPFPath {
	return &bpfAdapter{d: d, links: map[string]attachment{}}
}

type bpfAdapter struct {
	d     *bpfpath.Datapath
	links map[string]attachment // by interface name
}

// attachment is an interface's attachment and the interface's index then.
type attachment struct {
	*bpfpath.Attachment
	index int
}

func (a *bpfAdapter) Configure(in fastpath.Input) ([]string, error) {
	rep, err := a.d.Configure(in)
	return rep.Userspace, err
}

// SetNextHops gives the endpoints on an interface that does not exist no
// next hop: the program hands their packets to the stack, marked, where
// their policy route (as broken) decides.
func (a *bpfAdapter) SetNextHops(eps []route.EndpointRoute) error {
	hops := make([]bpfpath.NextHop, 0, len(eps))
	ifaces := map[string]*net.Interface{}
	for _, ep := range eps {
		ifc, ok := ifaces[ep.Interface]
		if !ok {
			ifc, _ = net.InterfaceByName(ep.Interface) // nil: no next hop
			ifaces[ep.Interface] = ifc
		}
		if ifc == nil {
			continue
		}
		hops = append(hops, bpfpath.NextHop{Mark: ep.Mark, Via: ep.Via, Ifindex: ifc.Index, MTU: ifc.MTU})
	}
	return a.d.SetNextHops(hops)
}

// AttachTo attaches again to an interface whose index changed (deleted
// and created again: the kernel dropped the old attachment with it).
func (a *bpfAdapter) AttachTo(ifnames []string) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(a.links)) {
		if ifc, err := net.InterfaceByName(name); err == nil && ifc.Index == a.links[name].index && slices.Contains(ifnames, name) {
			continue
		}
		if err := a.links[name].Detach(); err != nil {
			errs = append(errs, err)
		}
		delete(a.links, name)
	}
	for _, name := range ifnames {
		if _, ok := a.links[name]; ok {
			continue
		}
		ifc, err := net.InterfaceByName(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("interface %q: %w", name, err))
			continue
		}
		l, err := a.d.Attach(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		a.links[name] = attachment{l, ifc.Index}
	}
	return errors.Join(errs...)
}

func (a *bpfAdapter) Counters() (bpfpath.Counts, error) { return a.d.Counters() }
