package bpfpath

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"os"
	"slices"
	"sync"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/dataplane/fastpath"
	"github.com/sllbrd/sllbrd/maglev"
)

// tcActUnspec is TC_ACT_UNSPEC (-1) as BPF_PROG_TEST_RUN returns it.
const tcActUnspec = ^uint32(0)

// Frame layout, for ErrFrameSize.
const (
	ethHeaderLen     = 14
	etherTypeIPv4    = 0x0800
	etherTypeIPv6    = 0x86dd
	ipv4MinHeaderLen = 20
	ipv6HeaderLen    = 40
)

// Defaults of Options.
const (
	DefaultMaxVIPs     = 4096
	DefaultMaxServices = 1024
	DefaultMaxRoutes   = 4096
)

// Options configure Load: the capacity of the maps.
type Options struct {
	// MaxVIPs is how many VIPs the program decides (0: DefaultMaxVIPs);
	// Configure leaves the others to userspace.
	MaxVIPs int
	// MaxServices is how many Services have tables (0:
	// DefaultMaxServices); Configure punts the routes to the others.
	MaxServices int
	// MaxRoutes is how many routes have counters (0: DefaultMaxRoutes, at
	// most 65535); Configure punts the others at their place, so that
	// every packet is counted somewhere.
	MaxRoutes int
}

// Datapath is the loaded programs (tc and XDP) and their maps. Close
// releases them. Configure, SetNextHops, Counters, Attach, AttachXDP and
// Detach are serialised; Explain may run alongside them.
type Datapath struct {
	objs ingressObjects
	// The inner maps' templates: a new route set or table is a new map
	// made from them, swapped in by one update of the outer map.
	routeSetSpec, tableSpec         *ebpf.MapSpec
	maxVIPs, maxServices, maxRoutes int

	mu sync.Mutex // serialises Configure, SetNextHops, Counters, Attach, AttachXDP
	// What Configure last wrote: Service -> index (an index is reused
	// only after the Configure that removes its Service), the tables by
	// key, the route sets by VIP.
	services map[string]uint32
	tables   map[uint32][]ingressTableEntry
	vips     map[netip.Addr]*vipRoutes
	// Counters (counters.go): route -> its index in route_counters (an
	// index is reused only after the Configure that removes its route);
	// (table, slot) -> the endpoint it counts.
	routeIDs  map[fastpath.RouteLabels]uint16
	endpoints map[ingressSlotKey]fastpath.EndpointLabels
	// hopsWanted is what SetNextHops was last given, hops what is in the
	// map: the same, with the XDP target flag as last asked (nexthops.go).
	hopsWanted, hops map[ingressEndpointKey]ingressNextHop
	// links are the attachments (attach.go), which Close detaches.
	links map[*Attachment]bool
}

// Load loads the program into the kernel (it attaches nothing), with no
// VIP: every packet it decodes is StatusPuntNotVIP until Configure. It
// needs CAP_BPF, CAP_PERFMON (the verifier allows variable packet-pointer
// arithmetic only with it) and CAP_NET_ADMIN (root will do), and a kernel
// with BTF, sched_cls programs and inner maps of their own size (5.10);
// errors say which is missing.
func Load(opts Options) (*Datapath, error) {
	vips, services, routes := cmp.Or(opts.MaxVIPs, DefaultMaxVIPs), cmp.Or(opts.MaxServices, DefaultMaxServices), cmp.Or(opts.MaxRoutes, DefaultMaxRoutes)
	if vips < 1 || services < 1 || services > math.MaxInt32/2 || routes < 1 || routes > counterNone {
		return nil, fmt.Errorf("bpfpath: capacity of %d VIPs, %d Services and %d routes: want at least 1 each, at most %d Services and %d routes",
			vips, services, routes, math.MaxInt32/2, counterNone)
	}
	spec, err := loadIngress()
	if err != nil {
		return nil, fmt.Errorf("bpfpath: the embedded object: %w", err)
	}
	spec.Maps[ingressMapVipRoutes].MaxEntries = uint32(vips)
	spec.Maps[ingressMapMaglevTables].MaxEntries = uint32(2 * services)
	spec.Maps[ingressMapRouteCounters].MaxEntries = uint32(routes)
	if err := spec.Variables[ingressVarFlowSeed].Set(maglev.FlowSeed); err != nil {
		return nil, fmt.Errorf("bpfpath: setting the flow seed: %w", err)
	}
	d := &Datapath{
		routeSetSpec: spec.Maps[ingressMapVipRoutes].InnerMap.Copy(),
		tableSpec:    spec.Maps[ingressMapMaglevTables].InnerMap.Copy(),
		maxVIPs:      vips, maxServices: services, maxRoutes: routes,
		services: map[string]uint32{}, tables: map[uint32][]ingressTableEntry{}, vips: map[netip.Addr]*vipRoutes{},
		routeIDs: map[fastpath.RouteLabels]uint16{}, endpoints: map[ingressSlotKey]fastpath.EndpointLabels{},
		hopsWanted: map[ingressEndpointKey]ingressNextHop{}, hops: map[ingressEndpointKey]ingressNextHop{}, links: map[*Attachment]bool{},
	}
	if err := spec.LoadAndAssign(&d.objs, nil); err != nil {
		return nil, loadError(err)
	}
	return d, nil
}

// loadError says what the kernel lacks when loading failed.
func loadError(err error) error {
	var ve *ebpf.VerifierError
	switch {
	case errors.Is(err, unix.EPERM) || errors.Is(err, os.ErrPermission):
		return fmt.Errorf("bpfpath: loading the eBPF datapath needs CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN (or root): %w", err)
	case errors.As(err, &ve):
		return fmt.Errorf("bpfpath: the kernel's verifier rejected the eBPF datapath (its whole log: %%+v of the *ebpf.VerifierError): %w", err)
	case errors.Is(err, ebpf.ErrNotSupported):
		return fmt.Errorf("bpfpath: the kernel lacks a feature the eBPF datapath needs (CONFIG_BPF_SYSCALL, sched_cls programs, BTF; tcx needs 6.6): %w", err)
	}
	return fmt.Errorf("bpfpath: loading the eBPF datapath: %w", err)
}

// Program is the tc ingress program, for attaching (link.AttachTCX).
func (d *Datapath) Program() *ebpf.Program { return d.objs.SllbrdIngress }

// ErrFrameSize: BPF_PROG_TEST_RUN refuses the frame (EINVAL): shorter
// than an Ethernet header, or than the minimal IPv4 (20 bytes) or IPv6 (40)
// header its Ethernet type announces (kernel 6.18), or longer than a page
// less the skb's head- and tailroom (3712 bytes on x86-64). The program
// itself punts such short frames as malformed when they arrive on a link.
var ErrFrameSize = errors.New("bpfpath: a frame size BPF_PROG_TEST_RUN refuses")

// testRunFrameMax is a frame length every kernel's BPF_PROG_TEST_RUN takes.
const testRunFrameMax = 2048

// Explain runs the program once on frame (an Ethernet frame) through
// BPF_PROG_TEST_RUN and returns its Result, for operators (what would the
// datapath decide for this packet) and tests. It changes nothing but the
// program's run counters: the run has no ingress device, and the program
// only reports the decision of such a packet (no mark, count or redirect).
func (d *Datapath) Explain(frame []byte) (Result, error) {
	if testRunRefuses(frame) {
		return Result{}, fmt.Errorf("%w: %d bytes", ErrFrameSize, len(frame))
	}
	// cb starts with values the program never writes, so a result that
	// is not its own shows.
	in := skbContext{CB: [5]uint32{0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef}}
	var out skbContext
	ret, err := d.objs.SllbrdIngress.Run(&ebpf.RunOptions{Data: frame, Context: in, ContextOut: &out})
	if errors.Is(err, unix.EINVAL) && len(frame) > testRunFrameMax {
		return Result{}, fmt.Errorf("%w: %d bytes: %w", ErrFrameSize, len(frame), err)
	}
	if err != nil {
		return Result{}, fmt.Errorf("bpfpath: BPF_PROG_TEST_RUN: %w", err)
	}
	r := out.result()
	if ret != tcActUnspec {
		return r, fmt.Errorf("bpfpath: the program returned %d, want TC_ACT_UNSPEC", int32(ret))
	}
	if _, ok := statusNames[r.Status]; !ok {
		return r, fmt.Errorf("bpfpath: the program reported status %d: not one it writes", r.Status)
	}
	return r, nil
}

// testRunRefuses reports whether BPF_PROG_TEST_RUN refuses frame for
// being short (see ErrFrameSize).
func testRunRefuses(frame []byte) bool {
	if len(frame) < ethHeaderLen {
		return true
	}
	switch binary.BigEndian.Uint16(frame[12:14]) {
	case etherTypeIPv4:
		return len(frame) < ethHeaderLen+ipv4MinHeaderLen
	case etherTypeIPv6:
		return len(frame) < ethHeaderLen+ipv6HeaderLen
	}
	return false
}

// Close detaches the program from every interface it is attached to
// (Attach) and releases the program and its maps.
func (d *Datapath) Close() error {
	d.mu.Lock()
	links := slices.Collect(maps.Keys(d.links))
	d.mu.Unlock()
	var errs []error
	for _, a := range links {
		errs = append(errs, a.Detach())
	}
	if err := d.objs.Close(); err != nil {
		errs = append(errs, fmt.Errorf("bpfpath: %w", err))
	}
	return errors.Join(errs...)
}
