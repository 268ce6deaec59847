package dataplane

import (
	"fmt"
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
