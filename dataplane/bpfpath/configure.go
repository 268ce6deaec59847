package bpfpath

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/cilium/ebpf"

	"github.com/sllbrd/sllbrd/dataplane/fastpath"
)

// Report says what Configure programmed.
type Report struct {
	// VIPs and Tables are how many route sets and Service tables (one
	// per Service and family) the program now holds.
	VIPs, Tables int
	// RouteSetsWritten and TablesWritten are how many of them this call
	// replaced or added; the others were unchanged and left alone.
	RouteSetsWritten, TablesWritten int
	// Userspace says what the program leaves to userspace because it is
	// beyond its limits or cannot be expressed yet (byte matches), one
	// line per route or VIP and cause, as fastpath.Program.Userspace.
	Userspace []string
}

// Configure programs the maps with in, the input the kernel path compiles
// (dataplane's Plan gives both the same): every VIP's routes in
// precedence order, every Service's tables. It writes only what changed,
// each route set and each table whole, as a new inner map: a packet sees a
// VIP's old or new route set and a Service's old or new table, never a
// mixture, though it may see one VIP or table updated and another not yet.
// Tables are swapped in first and removed last, so a route set never names
// a table that another Service's has replaced. Swaps and removals are one
// batch per outer map: at most four updates, after each of which the
// kernel waits for the readers of the old inner maps (an RCU grace
// period), so when Configure returns no packet is decided with what it
// replaced. It fails, with nothing written, on an input the kernel path
// could not compile either (a Service named twice, a table entry whose
// slot has no mark); a kernel error part-way leaves what was written so
// far, and the next Configure completes it. The counters of new routes
// and endpoint addresses are added, at zero, before a route set or table
// names them; those of removed ones are dropped at the end (Counters).
func (d *Datapath) Configure(in fastpath.Input) (Report, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var rep Report
	services := map[string]*fastpath.Service{}
	for i := range in.Services {
		s := &in.Services[i]
		if services[s.Name] != nil {
			return rep, fmt.Errorf("bpfpath: service %s: named twice in the input", s.Name)
		}
		services[s.Name] = s
	}
	index, overflow := d.indexes(in.Services)
	eps := endpointCounters(in.Services, index)
	routeIDs, freshIDs := d.routeCounterIDs(in.Routes)
	for _, name := range overflow {
		rep.Userspace = append(rep.Userspace, fmt.Sprintf("service %s: beyond %d Services (Options.MaxServices): its routes to userspace", name, d.maxServices))
	}
	tables := map[uint32][]ingressTableEntry{}
	for name, i := range index {
		for _, fam := range []uint8{4, 6} {
			t, err := tableOf(services[name], fam)
			if err != nil {
				return rep, fmt.Errorf("bpfpath: %w", err)
			}
			tables[tableKey(i, fam)] = t
		}
	}
	keyOf := func(name string, fam uint8) (uint32, bool) {
		i, ok := index[name]
		return tableKey(i, fam), ok
	}
	vips, punted := routeSets(in.Routes, keyOf, func(name string) bool { return services[name] != nil })
	rep.Userspace = append(rep.Userspace, punted...)
	rep.Userspace = append(rep.Userspace, countRoutes(vips, in.Routes, routeIDs, d.maxRoutes)...)
	if len(vips) > d.maxVIPs {
		for _, vip := range slices.SortedFunc(maps.Keys(vips), netip.Addr.Compare)[d.maxVIPs:] {
			delete(vips, vip)
			rep.Userspace = append(rep.Userspace, fmt.Sprintf("VIP %s: beyond %d VIPs (Options.MaxVIPs): to userspace", vip, d.maxVIPs))
		}
	}

	// Nothing is written before here. New Services' indexes and routes'
	// counters are recorded first, so that a failure below cannot give
	// them to others; counters are zero before a table or route set names
	// them.
	maps.Copy(d.services, index)
	maps.Copy(d.routeIDs, routeIDs)
	for _, id := range freshIDs {
		if err := zeroPerCPU(d.objs.RouteCounters, uint32(id)); err != nil {
			return rep, fmt.Errorf("bpfpath: zeroing route counter %d: %w", id, err)
		}
	}
	if err := d.addEndpointCounters(eps); err != nil {
		return rep, fmt.Errorf("bpfpath: %w", err)
	}
	var tableKeys []uint32
	for _, key := range slices.Sorted(maps.Keys(tables)) {
		if !slices.Equal(d.tables[key], tables[key]) {
			tableKeys = append(tableKeys, key)
		}
	}
	n, err := swapIn(d.objs.MaglevTables, tableKeys, func(i int) (*ebpf.Map, error) { return d.newTable(tableKeys[i], tables[tableKeys[i]]) })
	for _, key := range tableKeys[:n] {
		d.tables[key] = tables[key]
	}
	rep.TablesWritten = n
	if err != nil {
		return rep, fmt.Errorf("bpfpath: tables: %w", err)
	}
	var changed []netip.Addr
	var vipKeys []ingressVipKey
	for _, vip := range slices.SortedFunc(maps.Keys(vips), netip.Addr.Compare) {
		if old := d.vips[vip]; old == nil || old.set != vips[vip].set {
			changed, vipKeys = append(changed, vip), append(vipKeys, vips[vip].key)
		}
	}
	n, err = swapIn(d.objs.VipRoutes, vipKeys, func(i int) (*ebpf.Map, error) { return d.newRouteSet(changed[i], vips[changed[i]]) })
	for _, vip := range changed[:n] {
		d.vips[vip] = vips[vip]
	}
	rep.RouteSetsWritten = n
	if err != nil {
		return rep, fmt.Errorf("bpfpath: route sets: %w", err)
	}

	var goneVIPs []netip.Addr
	vipKeys = vipKeys[:0]
	for _, vip := range slices.SortedFunc(maps.Keys(d.vips), netip.Addr.Compare) {
		if vips[vip] == nil {
			goneVIPs, vipKeys = append(goneVIPs, vip), append(vipKeys, d.vips[vip].key)
		}
	}
	if err := removeAll(d.objs.VipRoutes, vipKeys); err != nil {
		return rep, fmt.Errorf("bpfpath: removing VIPs %v: %w", goneVIPs, err)
	}
	for _, vip := range goneVIPs {
		delete(d.vips, vip)
	}
	tableKeys = tableKeys[:0]
	for _, key := range slices.Sorted(maps.Keys(d.tables)) {
		if tables[key] == nil {
			tableKeys = append(tableKeys, key)
		}
	}
	if err := removeAll(d.objs.MaglevTables, tableKeys); err != nil {
		return rep, fmt.Errorf("bpfpath: removing tables %v: %w", tableKeys, err)
	}
	for _, key := range tableKeys {
		delete(d.tables, key)
	}
	if err := d.removeEndpointCounters(eps); err != nil {
		return rep, fmt.Errorf("bpfpath: %w", err)
	}
	for l := range d.routeIDs {
		if _, ok := routeIDs[l]; !ok {
			delete(d.routeIDs, l) // its counter is free from now on
		}
	}
	for name := range d.services {
		if _, ok := index[name]; !ok {
			delete(d.services, name) // its index is free from now on
		}
	}
	rep.VIPs, rep.Tables = len(d.vips), len(d.tables)
	return rep, nil
}

// indexes gives every Service of the input its index in maglev_tables: the
// one it has, or the lowest free one (not held by any Service programmed
// now, removed or not). overflow lists the Services beyond MaxServices.
func (d *Datapath) indexes(in []fastpath.Service) (index map[string]uint32, overflow []string) {
	index = map[string]uint32{}
	used := map[uint32]bool{}
	for _, i := range d.services {
		used[i] = true
	}
	next := uint32(0)
	for _, s := range in {
		if i, ok := d.services[s.Name]; ok {
			index[s.Name] = i
			continue
		}
		for used[next] {
			next++
		}
		if int(next) >= d.maxServices {
			overflow = append(overflow, s.Name)
			continue
		}
		index[s.Name], used[next] = next, true
	}
	return index, overflow
}
