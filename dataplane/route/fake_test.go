package route

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/sllbrd/sllbrd/internal/tableroute"
)

// fakeKernel keeps rules and routes in memory and records every change.
type fakeKernel struct {
	links  map[string]uint32
	rules  []Rule
	routes []Route
	neighs []string // "ifindex/addr" deleted
	ops    []string
	fail   func(op string) error // injected failure per operation
}

func newFakeKernel() *fakeKernel {
	return &fakeKernel{links: map[string]uint32{"eth1": 3, "eth2": 4}}
}

func (f *fakeKernel) do(op string) error {
	f.ops = append(f.ops, op)
	if f.fail != nil {
		return f.fail(op)
	}
	return nil
}

func (f *fakeKernel) LinkIndex(name string) (uint32, error) {
	if i, ok := f.links[name]; ok {
		return i, nil
	}
	return 0, errors.New("no such interface")
}

func (f *fakeKernel) Rules() ([]Rule, error) { return slices.Clone(f.rules), nil }

// Routes lists the routes as the kernel's listing does: hops sorted.
func (f *fakeKernel) Routes() ([]Route, error) {
	out := slices.Clone(f.routes)
	for i := range out {
		out[i].Hops = slices.Clone(out[i].Hops)
		tableroute.SortHops(out[i].Hops)
	}
	return out, nil
}

func (f *fakeKernel) AddRule(r Rule) error {
	if err := f.do("add " + r.String()); err != nil {
		return err
	}
	if slices.ContainsFunc(f.rules, func(o Rule) bool { return deletionKey(o) == deletionKey(r) }) {
		return errors.New("EEXIST") // as the kernel: a goto's target and "not" do not tell rules apart
	}
	f.rules = append(f.rules, r)
	return nil
}

func (f *fakeKernel) DeleteRule(r Rule) error {
	if err := f.do("del " + r.String()); err != nil {
		return err
	}
	i := slices.IndexFunc(f.rules, func(o Rule) bool { return deletionKey(o) == deletionKey(r) })
	if i < 0 {
		return errors.New("ENOENT")
	}
	f.rules = slices.Delete(f.rules, i, i+1)
	return nil
}

func (f *fakeKernel) ReplaceRoute(r Route) error {
	if err := f.do("replace " + r.String()); err != nil {
		return err
	}
	f.routes = slices.DeleteFunc(f.routes, func(o Route) bool { return o.Key() == r.Key() })
	f.routes = append(f.routes, r)
	return nil
}

func (f *fakeKernel) DeleteRoute(r Route) error {
	if err := f.do("del " + r.String()); err != nil {
		return err
	}
	n := len(f.routes)
	f.routes = slices.DeleteFunc(f.routes, func(o Route) bool { return o.Key() == r.Key() })
	if len(f.routes) == n {
		return errors.New("ESRCH")
	}
	return nil
}

func (f *fakeKernel) DeleteNeighbour(ifIndex uint32, addr netip.Addr) error {
	if err := f.do(fmt.Sprintf("flush neigh %s ifindex %d", addr, ifIndex)); err != nil {
		return err
	}
	f.neighs = append(f.neighs, fmt.Sprintf("%d/%s", ifIndex, addr))
	return nil
}

func (f *fakeKernel) routeStrings() []string {
	var out []string
	for _, r := range f.routes {
		out = append(out, r.String())
	}
	slices.Sort(out)
	return out
}

func (f *fakeKernel) ruleStrings() []string {
	var out []string
	for _, r := range f.rules {
		out = append(out, r.String())
	}
	slices.Sort(out)
	return out
}
