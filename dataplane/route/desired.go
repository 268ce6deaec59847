package route

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/sllbrd/sllbrd/internal/tableroute"
)

type desiredState struct {
	catchAll       []Rule // one per family: fwmark Marks.Value/Marks.Mask blackhole
	skip           []Rule // one per family: not fwmark Marks.Value/Marks.Mask goto the from-VIP rules
	rules          []Rule
	routes         []Route
	endpointTables map[uint32]uint32 // table -> the mark routed by it
}

// desired translates the input into rules and routes, skipping (and
// reporting) invalid or conflicting objects.
func (rc *Reconciler) desired(endpoints []EndpointRoute, paths []ReturnPath) (desiredState, []error) {
	d := desiredState{endpointTables: make(map[uint32]uint32, len(endpoints)),
		rules: make([]Rule, 0, len(endpoints)), routes: make([]Route, 0, 2*len(endpoints))}
	for _, fam := range []Family{IPv4, IPv6} {
		d.catchAll = append(d.catchAll, Rule{Family: fam, Priority: rc.ranges.Priorities.Min + catchAllRuleOffset,
			Mark: rc.ranges.Marks.Value, Mask: rc.ranges.Marks.Mask, Blackhole: true})
		d.skip = append(d.skip, Rule{Family: fam, Priority: rc.ranges.skipPriority(), Invert: true,
			Mark: rc.ranges.Marks.Value, Mask: rc.ranges.Marks.Mask, Goto: rc.ranges.Priorities.Min + fromVIPRuleOffset})
	}
	var errs []error
	links := map[string]uint32{}
	marks := make(map[markFamily]netip.Addr, len(endpoints))
	for _, e := range endpoints {
		if err := rc.addEndpoint(&d, links, marks, e); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e, err))
		}
	}
	pathTables := map[uint32]bool{}
	for _, p := range paths {
		if err := rc.addReturnPath(&d, links, pathTables, p); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	return d, errs
}

// markFamily keys endpoint routes: a dual-stack endpoint has one route per
// family under one mark and table.
type markFamily struct {
	mark uint32
	fam  Family
}

func (rc *Reconciler) addEndpoint(d *desiredState, links map[string]uint32, marks map[markFamily]netip.Addr, e EndpointRoute) error {
	if err := e.validate(rc.ranges); err != nil {
		return err
	}
	via := e.Via.Unmap().WithZone("")
	fam := tableroute.FamilyOf(via)
	if _, dup := marks[markFamily{e.Mark, fam}]; dup {
		return fmt.Errorf("%w: mark already used by another endpoint of this family", ErrInvalid)
	}
	if table, used := d.endpointTables[e.Table]; used && table != e.Mark {
		return fmt.Errorf("%w: table already used by another mark", ErrInvalid)
	}
	idx, err := rc.linkIndex(links, e.Interface)
	if err != nil {
		return err
	}
	marks[markFamily{e.Mark, fam}], d.endpointTables[e.Table] = via, e.Mark
	d.rules = append(d.rules, Rule{Family: fam, Priority: rc.ranges.Priorities.Min + markRuleOffset,
		Mark: e.Mark, Mask: exactMask, Table: e.Table})
	d.routes = append(d.routes, Route{Family: fam, Table: e.Table, Metric: GatewayMetric,
		Hops: []Hop{{Gateway: via, IfIndex: idx}}},
		Route{Family: fam, Table: e.Table, Metric: BlackholeMetric, Blackhole: true})
	return nil
}

func (rc *Reconciler) addReturnPath(d *desiredState, links map[string]uint32, tables map[uint32]bool, p ReturnPath) error {
	if err := p.validate(rc.ranges); err != nil {
		return err
	}
	if _, endpointTable := d.endpointTables[p.Table]; tables[p.Table] || endpointTable {
		return fmt.Errorf("%w: table already used", ErrInvalid)
	}
	tables[p.Table] = true
	hops := map[Family][]Hop{}
	var errs []error
	for _, g := range p.Gateways {
		idx, err := rc.linkIndex(links, g.Interface)
		if err != nil {
			errs = append(errs, fmt.Errorf("gateway %s: %w", g.Addr, err))
			continue
		}
		gw := g.Addr.Unmap()
		hops[tableroute.FamilyOf(gw)] = append(hops[tableroute.FamilyOf(gw)], Hop{Gateway: gw, IfIndex: idx})
	}
	families := map[Family]bool{}
	for _, v := range p.VIPs {
		v = v.Unmap().WithZone("")
		fam := tableroute.FamilyOf(v)
		families[fam] = true
		src := netip.PrefixFrom(v, v.BitLen())
		d.rules = append(d.rules,
			Rule{Family: fam, Priority: rc.ranges.Priorities.Min + fromVIPRuleOffset, Src: src, Table: p.Table},
			Rule{Family: fam, Priority: rc.ranges.Priorities.Min + fromVIPDropOffset, Src: src, Blackhole: true})
	}
	for _, fam := range []Family{IPv4, IPv6} {
		if !families[fam] {
			continue
		}
		d.routes = append(d.routes, Route{Family: fam, Table: p.Table, Metric: BlackholeMetric, Blackhole: true})
		if h := dedupHops(hops[fam]); len(h) > 0 {
			d.routes = append(d.routes, Route{Family: fam, Table: p.Table, Metric: GatewayMetric, Hops: h})
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("applied without some gateways: %w", errors.Join(errs...))
	}
	return nil
}

func (rc *Reconciler) linkIndex(cache map[string]uint32, name string) (uint32, error) {
	if idx, ok := cache[name]; ok {
		return idx, nil
	}
	idx, err := rc.kernel.LinkIndex(name)
	if err != nil {
		return 0, fmt.Errorf("interface %q: %w", name, err)
	}
	cache[name] = idx
	return idx, nil
}

func dedupHops(h []Hop) []Hop {
	tableroute.SortHops(h)
	return slices.Compact(h)
}
