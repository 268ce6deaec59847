package targetnet

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/sllbrd/sllbrd/internal/tableroute"
)

// Applier makes the pod's namespace hold a Desired configuration. It is
// not safe for concurrent use.
type Applier struct {
	kernel Kernel
}

// New returns an Applier over k; it does not touch the kernel.
func New(k Kernel) *Applier { return &Applier{kernel: k} }

// plan is what one Apply changes, in the order it changes it.
type plan struct {
	replace   []Route // blackholes first
	addRules  []Rule
	addAddrs  []Address
	delAddrs  []Address
	delRules  []Rule
	delRoutes []Route
	flush     []Hop // neighbours of next hops no longer used

	kept      map[string][]Family     // gateway -> families whose last next hops stay
	down      map[string][]netip.Addr // gateway -> next hops left out as down (Gateway.Down)
	allDown   map[string][]Family     // gateway -> families whose next hops are all down, all kept
	conflicts []string
	errs      []error
}

func (p plan) changes() bool {
	return len(p.replace)+len(p.addRules)+len(p.addAddrs)+len(p.delAddrs)+len(p.delRules)+len(p.delRoutes) > 0
}

// Apply makes the namespace hold d and removes what is ours and not in d.
// An invalid d changes nothing. Foreign configuration in the way is left as
// it is and reported in Result.Conflicts. The error joins every failure
// (each wrapped with its object); the rest is applied anyway.
func (a *Applier) Apply(d Desired) (Result, error) {
	if err := d.Validate(); err != nil {
		return Result{}, err
	}
	obs, err := a.observe()
	if err != nil {
		return Result{}, fmt.Errorf("read the kernel: %w", err)
	}
	p := a.plan(d, obs)
	errs := append(p.errs, a.execute(p)...)
	if p.changes() {
		if obs, err = a.observe(); err != nil {
			return Result{}, errors.Join(append(errs, fmt.Errorf("read the kernel after applying: %w", err))...)
		}
	}
	return result(d, obs, p), errors.Join(errs...)
}

func (a *Applier) plan(d Desired, obs observed) plan {
	p := plan{kept: map[string][]Family{}, down: map[string][]netip.Addr{}, allDown: map[string][]Family{}}
	wantRules, wantAddrs, keepRoutes := map[Rule]bool{}, map[Address]bool{}, map[tableroute.Key]bool{}
	for _, g := range d.Gateways {
		for _, f := range Families {
			vips := g.vipsOf(f)
			if len(vips) == 0 {
				continue
			}
			p.planRoutes(g, f, obs, keepRoutes)
			for _, v := range vips {
				wantRules[ourRule(v, g.Table)] = true
				wantRules[dropRule(v)] = true
				p.checkShadowingRules(obs, v, g.Name)
				if fa, taken := obs.foreignAddress(v.Addr()); taken {
					p.conflicts = append(p.conflicts, fmt.Sprintf("VIP %s of gateway %s: %s on %s is not sllbrd's (no IFA_PROTO %d); left as is",
						v, g.Name, fa.Prefix, obs.links[fa.LinkIndex], Protocol))
					continue
				}
				wantAddrs[Address{LinkIndex: obs.lo, Prefix: v, Protocol: Protocol}] = true
			}
		}
	}
	for _, r := range obs.rules {
		if (r.Priority == RulePriority || r.Priority == DropRulePriority) && !ownsRule(r) {
			p.conflicts = append(p.conflicts, fmt.Sprintf("%s is at sllbrd's priority %d and not sllbrd's; left as is", r, r.Priority))
		}
	}
	for r := range wantRules {
		if !obs.ourRules[r] {
			p.addRules = append(p.addRules, r)
		}
	}
	for ad := range wantAddrs {
		if !obs.ourAddrs[ad] {
			p.addAddrs = append(p.addAddrs, ad)
		}
	}
	for ad := range obs.ourAddrs {
		if !wantAddrs[ad] {
			p.delAddrs = append(p.delAddrs, ad)
		}
	}
	for r := range obs.ourRules {
		if !wantRules[r] {
			p.delRules = append(p.delRules, r)
		}
	}
	for k, r := range obs.routes {
		if !keepRoutes[k] {
			p.delRoutes = append(p.delRoutes, r)
			p.flush = append(p.flush, r.Hops...)
		}
	}
	p.sort()
	return p
}

// planRoutes plans the routes of family f in g's table: the blackhole
// default and the default over g's next hops but those found down (all of
// them when all are down). Without next hops the last ones stay: replies
// keep flowing while the SLLBR pods are replaced.
func (p *plan) planRoutes(g Gateway, f Family, obs observed, keep map[tableroute.Key]bool) {
	hole := Route{Family: f, Table: g.Table, Metric: BlackholeMetric, Blackhole: true}
	keep[hole.Key()] = true
	if old, ok := obs.routes[hole.Key()]; !ok || !old.Equal(hole) {
		p.replace = append(p.replace, hole)
	}
	key := tableroute.Key{Family: f, Table: g.Table, Metric: NextHopMetric}
	old, exists := obs.routes[key]
	nhs := g.nextHopsOf(f)
	if len(nhs) == 0 {
		if exists {
			keep[key] = true
			p.kept[g.Name] = append(p.kept[g.Name], f)
		}
		return
	}
	link, ok := obs.interfaceFor(g.subnetsOf(f))
	if !ok {
		keep[key] = exists
		p.errs = append(p.errs, fmt.Errorf("gateway %s: no interface holds an address in %v: %s next hops not routed", g.Name, g.subnetsOf(f), f))
		return
	}
	live := slices.DeleteFunc(slices.Clone(nhs), func(h netip.Addr) bool { return slices.Contains(g.Down, h) })
	switch {
	case len(live) == 0:
		// Never no next hop because of liveness: every one is down
		// (the SLLBRs' side of the network, or the pod's, is broken), so
		// each is as good as another; removing them all would drop every
		// reply.
		live = nhs
		p.allDown[g.Name] = append(p.allDown[g.Name], f)
	case len(live) < len(nhs):
		p.down[g.Name] = append(p.down[g.Name], slices.DeleteFunc(slices.Clone(nhs), func(h netip.Addr) bool { return slices.Contains(live, h) })...)
	}
	want := Route{Family: f, Table: g.Table, Metric: NextHopMetric}
	for _, h := range live {
		want.Hops = append(want.Hops, Hop{Gateway: h, IfIndex: link})
	}
	keep[key] = true
	if exists && old.Equal(want) {
		return
	}
	p.replace = append(p.replace, want)
	for _, h := range old.Hops {
		// A next hop left out as down keeps its neighbour entry: it is
		// still the same SLLBR pod, and its BFD session uses the entry.
		downHere := h.IfIndex == link && slices.Contains(nhs, h.Gateway)
		if !slices.Contains(want.Hops, h) && !downHere {
			p.flush = append(p.flush, h)
		}
	}
}

// checkShadowingRules reports foreign rules evaluated before ours that
// select traffic from vip.
func (p *plan) checkShadowingRules(obs observed, vip netip.Prefix, gateway string) {
	for _, r := range obs.rules {
		if r.Priority < RulePriority && r.Src.IsValid() && r.Src.Contains(vip.Addr()) && !ownsRule(r) {
			p.conflicts = append(p.conflicts, fmt.Sprintf("VIP %s of gateway %s: %s comes before sllbrd's rules; left as is", vip, gateway, r))
		}
	}
}

// sort makes the plan deterministic (maps were iterated).
func (p *plan) sort() {
	slices.SortStableFunc(p.replace, func(a, b Route) int { return boolInt(!a.Blackhole) - boolInt(!b.Blackhole) })
	byString(p.addRules)
	byString(p.delRules)
	byString(p.addAddrs)
	byString(p.delAddrs)
	byString(p.delRoutes)
	slices.Sort(p.conflicts)
}

func byString[T fmt.Stringer](s []T) {
	slices.SortFunc(s, func(a, b T) int { return strings.Compare(a.String(), b.String()) })
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// execute carries out p: routes, then rules, then addresses are added (a
// VIP is never local before its replies have a route), then addresses,
// rules and routes removed in the reverse order, then stale neighbour
// entries flushed. A failure does not stop the rest.
func (a *Applier) execute(p plan) []error {
	k := a.kernel
	errs := each("replace", p.replace, k.ReplaceRoute)
	errs = append(errs, each("add", p.addRules, k.AddRule)...)
	errs = append(errs, each("add", p.addAddrs, k.AddAddress)...)
	errs = append(errs, each("delete", p.delAddrs, k.DeleteAddress)...)
	errs = append(errs, each("delete", p.delRules, k.DeleteRule)...)
	errs = append(errs, each("delete", p.delRoutes, k.DeleteRoute)...)
	for _, h := range p.flush {
		if h.Gateway.IsValid() && h.IfIndex != 0 {
			if err := a.kernel.DeleteNeighbour(h.IfIndex, h.Gateway); err != nil {
				errs = append(errs, fmt.Errorf("flush neighbour %s ifindex %d: %w", h.Gateway, h.IfIndex, err))
			}
		}
	}
	return errs
}

// each runs op on every item and returns the failures, wrapped with verb
// and the item.
func each[T fmt.Stringer](verb string, items []T, op func(T) error) []error {
	var errs []error
	for _, it := range items {
		if err := op(it); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", verb, it, err))
		}
	}
	return errs
}
