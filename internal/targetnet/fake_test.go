package targetnet

import (
	"errors"
	"net/netip"
	"slices"
	"sync"

	"github.com/sllbrd/sllbrd/internal/tableroute"
)

// fakeKernel keeps a namespace in memory and records every change.
type fakeKernel struct {
	mu     sync.Mutex // tests change the fields under it while a Loop runs
	links  []Link
	addrs  []Address
	rules  []Rule
	routes []Route
	neighs []string // "ifindex/addr" flushed
	ops    []string
	fail   func(op string) error // injected failure per operation
	// dropsProtocol makes it a kernel before 5.18: it accepts IFA_PROTO
	// and keeps addresses without it.
	dropsProtocol bool
}

// newFakeKernel is a pod: lo (1) with 127.0.0.1, net1 (2) on the Gateway's
// network, eth0 (3) on the pod network, and the kernel's own rules.
func newFakeKernel() *fakeKernel {
	return &fakeKernel{
		links: []Link{{1, "lo"}, {2, "net1"}, {3, "eth0"}},
		addrs: []Address{
			{LinkIndex: 1, Prefix: netip.MustParsePrefix("127.0.0.1/8")},
			{LinkIndex: 2, Prefix: netip.MustParsePrefix("169.111.100.11/24")},
			{LinkIndex: 2, Prefix: netip.MustParsePrefix("fd00:111::11/64")},
			{LinkIndex: 3, Prefix: netip.MustParsePrefix("10.244.0.7/24")},
		},
		rules: []Rule{
			{Family: IPv4, Priority: 0, Table: 255, Plain: true}, {Family: IPv4, Priority: 32766, Table: 254, Plain: true},
			{Family: IPv6, Priority: 0, Table: 255, Plain: true}, {Family: IPv6, Priority: 32766, Table: 254, Plain: true},
		},
		routes: []Route{{Family: IPv4, Table: 254, Hops: []Hop{{Gateway: netip.MustParseAddr("10.244.0.1"), IfIndex: 3}}}},
	}
}

func (f *fakeKernel) do(op string) error {
	f.ops = append(f.ops, op)
	if f.fail != nil {
		return f.fail(op)
	}
	return nil
}

func (f *fakeKernel) Links() ([]Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.links), nil
}

func (f *fakeKernel) Addresses() ([]Address, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.addrs), nil
}

func (f *fakeKernel) Rules() ([]Rule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.rules), nil
}

func (f *fakeKernel) Routes() ([]Route, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.routes)
	for i := range out {
		out[i].Hops = slices.Clone(out[i].Hops)
		tableroute.SortHops(out[i].Hops) // as the kernel's listing
	}
	return out, nil
}

func (f *fakeKernel) AddAddress(a Address) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.do("add " + a.String()); err != nil {
		return err
	}
	if slices.ContainsFunc(f.addrs, func(o Address) bool { return o.LinkIndex == a.LinkIndex && o.Prefix == a.Prefix }) {
		return errors.New("EEXIST")
	}
	if f.dropsProtocol {
		a.Protocol = 0
	}
	f.addrs = append(f.addrs, a)
	return nil
}

func (f *fakeKernel) DeleteAddress(a Address) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.do("del " + a.String()); err != nil {
		return err
	}
	i := slices.IndexFunc(f.addrs, func(o Address) bool { return o.LinkIndex == a.LinkIndex && o.Prefix == a.Prefix })
	if i < 0 {
		return errors.New("EADDRNOTAVAIL")
	}
	f.addrs = slices.Delete(f.addrs, i, i+1)
	return nil
}

func (f *fakeKernel) AddRule(r Rule) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.do("add " + r.String()); err != nil {
		return err
	}
	if slices.Contains(f.rules, r) {
		return errors.New("EEXIST")
	}
	f.rules = append(f.rules, r)
	return nil
}

func (f *fakeKernel) DeleteRule(r Rule) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.do("del " + r.String()); err != nil {
		return err
	}
	i := slices.Index(f.rules, r)
	if i < 0 {
		return errors.New("ENOENT")
	}
	f.rules = slices.Delete(f.rules, i, i+1)
	return nil
}

func (f *fakeKernel) ReplaceRoute(r Route) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.do("replace " + r.String()); err != nil {
		return err
	}
	r.Hops = slices.Clone(r.Hops)
	if i := slices.IndexFunc(f.routes, func(o Route) bool { return o.Key() == r.Key() }); i >= 0 {
		f.routes[i] = r
		return nil
	}
	f.routes = append(f.routes, r)
	return nil
}

func (f *fakeKernel) DeleteRoute(r Route) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.do("del " + r.String()); err != nil {
		return err
	}
	i := slices.IndexFunc(f.routes, func(o Route) bool { return o.Key() == r.Key() })
	if i < 0 {
		return errors.New("ESRCH")
	}
	f.routes = slices.Delete(f.routes, i, i+1)
	return nil
}

func (f *fakeKernel) DeleteNeighbour(ifIndex uint32, addr netip.Addr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.neighs = append(f.neighs, netip.AddrPortFrom(addr, uint16(ifIndex)).String())
	return f.do("flush " + addr.String())
}
