package dataplane

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sllbrd/sllbrd/dataplane/bpfpath"
	"github.com/sllbrd/sllbrd/dataplane/fastpath"
	"github.com/sllbrd/sllbrd/dataplane/route"
)

// BPFOptions configure NewBPFPath.
type BPFOptions struct {
	// XDP, when set, attaches the XDP program in XDPMode to each
	// interface besides the tc program, and gives the next hops the MACs
	// it needs (from the kernel's neighbour table: Neighbours).
	XDP     bool
	XDPMode bpfpath.XDPMode
	// Neighbours lists the kernel's neighbour table (nil:
	// NetlinkNeighbours in the calling thread's namespace).
	Neighbours func() (Neighbours, error)
	// Log, when set, hears of every attachment and detachment.
	Log *slog.Logger
}

// BPFAdapter adapts a loaded *bpfpath.Datapath to BPFPath: next hops take
// their interface's index, MTU and (with XDP) MACs from the calling
// thread's network namespace at each call. Refresh writes the next hops
// again with the interfaces (and neighbour table) as they are now, and
// attaches again to an interface created again; Run calls it as they
// change.
type BPFAdapter struct {
	d    *bpfpath.Datapath
	opts BPFOptions

	mu      sync.Mutex                       // serialises SetNextHops, AttachTo and Refresh
	eps     []route.EndpointRoute            // what SetNextHops was last given
	ifnames []string                         // what AttachTo was last given
	links   map[string][]*bpfpath.Attachment // by interface name: tc, then XDP

	refreshFailures atomic.Uint64 // Run's (ebpf_refresh.go)
}

// RefreshFailures counts Run's failed refreshes (reading the interfaces
// or the neighbour table, writing the next hops, attaching again) and its
// lost notification sockets.
func (a *BPFAdapter) RefreshFailures() uint64 { return a.refreshFailures.Load() }

// NewBPFPath returns d's adapter.
func NewBPFPath(d *bpfpath.Datapath, opts BPFOptions) *BPFAdapter {
	if opts.Neighbours == nil {
		opts.Neighbours = NetlinkNeighbours
	}
	return &BPFAdapter{d: d, opts: opts, links: map[string][]*bpfpath.Attachment{}}
}

// Configure configures the program; it returns what it leaves to the
// kernel path.
func (a *BPFAdapter) Configure(in fastpath.Input) ([]string, error) {
	rep, err := a.d.Configure(in)
	return rep.Userspace, err
}

// SetNextHops gives the endpoints on an interface that does not exist no
// next hop: the program hands their packets to the stack, marked, where
// their policy route (as broken) decides.
func (a *BPFAdapter) SetNextHops(eps []route.EndpointRoute) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.eps = slices.Clone(eps)
	return a.writeNextHops()
}

// Refresh writes the next hops SetNextHops was last given again, with
// their interfaces' indexes, MTUs (and with XDP the neighbour table's
// MACs) as they are now, and attaches again to the interfaces AttachTo
// was last given whose index changed.
func (a *BPFAdapter) Refresh() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return errors.Join(a.writeNextHops(), a.attachTo(a.ifnames))
}

// writeNextHops writes a.eps's next hops. A next hop gets MACs when its
// neighbour entry is usable (Neighbours); without, the XDP program passes
// its packets to the tc program, whose redirect resolves the neighbour.
func (a *BPFAdapter) writeNextHops() error {
	if !a.opts.XDP {
		return a.write(nil)
	}
	neigh, err := a.opts.Neighbours()
	if err != nil {
		// No MACs: the XDP program passes everything, the tc program
		// forwards it meanwhile.
		return errors.Join(fmt.Errorf("neighbour table: %w", err), a.write(nil))
	}
	return a.write(neigh)
}

func (a *BPFAdapter) write(neigh Neighbours) error {
	hops := make([]bpfpath.NextHop, 0, len(a.eps))
	ifaces := map[string]*net.Interface{}
	for _, ep := range a.eps {
		ifc, ok := ifaces[ep.Interface]
		if !ok {
			ifc, _ = net.InterfaceByName(ep.Interface) // nil: no next hop
			ifaces[ep.Interface] = ifc
		}
		if ifc == nil {
			continue
		}
		h := bpfpath.NextHop{Mark: ep.Mark, Via: ep.Via, Ifindex: ifc.Index, MTU: ifc.MTU}
		if mac := neigh[NeighbourKey{Ifindex: ifc.Index, Addr: ep.Via.Unmap()}]; len(mac) == 6 && len(ifc.HardwareAddr) == 6 {
			h.MAC, h.SrcMAC = mac, ifc.HardwareAddr
		}
		hops = append(hops, h)
	}
	return a.d.SetNextHops(hops)
}

// AttachTo attaches the tc program (and with XDP the XDP program) to
// exactly the interfaces named, and again to an interface whose index
// changed (deleted and created again: the kernel dropped the old
// attachments with it).
func (a *BPFAdapter) AttachTo(ifnames []string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ifnames = slices.Clone(ifnames)
	return a.attachTo(ifnames)
}

func (a *BPFAdapter) attachTo(ifnames []string) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(a.links)) {
		links := a.links[name]
		if ifc, err := net.InterfaceByName(name); err == nil && ifc.Index == links[0].Ifindex() && slices.Contains(ifnames, name) {
			continue
		}
		for i := len(links) - 1; i >= 0; i-- {
			if err := links[i].Detach(); err != nil {
				errs = append(errs, err)
			}
		}
		delete(a.links, name)
		a.log("eBPF datapath detached", "interface", name)
	}
	for _, name := range ifnames {
		if _, ok := a.links[name]; ok {
			continue
		}
		if err := a.attach(name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// attach attaches to one interface: the tc program first (it acts on what
// the XDP program passes).
func (a *BPFAdapter) attach(name string) error {
	tc, err := a.d.Attach(name)
	if err != nil {
		return err
	}
	links := []*bpfpath.Attachment{tc}
	if a.opts.XDP {
		x, err := a.d.AttachXDP(name, a.opts.XDPMode)
		if err != nil {
			return errors.Join(err, tc.Detach())
		}
		links = append(links, x)
	}
	a.links[name] = links
	modes := make([]string, 0, len(links))
	for _, l := range links {
		modes = append(modes, l.Mode())
	}
	a.log("eBPF datapath attached", "interface", name, "ifindex", tc.Ifindex(), "programs", modes)
	return nil
}

func (a *BPFAdapter) log(msg string, args ...any) {
	if a.opts.Log != nil {
		a.opts.Log.Info(msg, args...)
	}
}

// Counters reads the program's counters.
func (a *BPFAdapter) Counters() (bpfpath.Counts, error) { return a.d.Counters() }
