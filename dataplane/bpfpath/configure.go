package bpfpath

import (
	"errors"
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
// each route set and each table whole: a packet sees a VIP's old or new
// route set and a Service's old or new table, never a mixture, though it
// may see one VIP or table updated and another not yet. Tables are
// written first and removed last, so a route set never names a table that
// another Service's has replaced. It fails, with nothing written, on an
// input the kernel path could not compile either (a Service named twice,
// a table entry whose slot has no mark); a kernel error part-way leaves
// what was written so far, and the next Configure completes it.
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
	if len(vips) > d.maxVIPs {
		for _, vip := range slices.SortedFunc(maps.Keys(vips), netip.Addr.Compare)[d.maxVIPs:] {
			delete(vips, vip)
			rep.Userspace = append(rep.Userspace, fmt.Sprintf("VIP %s: beyond %d VIPs (Options.MaxVIPs): to userspace", vip, d.maxVIPs))
		}
	}

	// Nothing is written before here. New Services' indexes are recorded
	// first, so that a failure below cannot give them to others.
	maps.Copy(d.services, index)
	for _, key := range slices.Sorted(maps.Keys(tables)) {
		if slices.Equal(d.tables[key], tables[key]) {
			continue
		}
		if err := d.writeTable(key, tables[key]); err != nil {
			return rep, err
		}
		d.tables[key] = tables[key]
		rep.TablesWritten++
	}
	for _, vip := range slices.SortedFunc(maps.Keys(vips), netip.Addr.Compare) {
		if old := d.vips[vip]; old != nil && old.set == vips[vip].set {
			continue
		}
		if err := d.writeRouteSet(vip, vips[vip]); err != nil {
			return rep, err
		}
		d.vips[vip] = vips[vip]
		rep.RouteSetsWritten++
	}
	for _, vip := range slices.SortedFunc(maps.Keys(d.vips), netip.Addr.Compare) {
		if vips[vip] != nil {
			continue
		}
		if err := d.objs.VipRoutes.Delete(d.vips[vip].key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return rep, fmt.Errorf("bpfpath: removing VIP %s: %w", vip, err)
		}
		delete(d.vips, vip)
	}
	for _, key := range slices.Sorted(maps.Keys(d.tables)) {
		if tables[key] != nil {
			continue
		}
		if err := d.objs.MaglevTables.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return rep, fmt.Errorf("bpfpath: removing table %d: %w", key, err)
		}
		delete(d.tables, key)
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

// writeTable makes a new table map holding t and swaps it in at key.
func (d *Datapath) writeTable(key uint32, t []ingressTableEntry) error {
	spec := d.tableSpec.Copy()
	spec.MaxEntries = uint32(len(t))
	m, err := ebpf.NewMap(spec)
	if err != nil {
		return fmt.Errorf("bpfpath: creating table %d of %d entries: %w", key, len(t)-1, err)
	}
	defer m.Close() // maglev_tables holds its own reference
	keys := make([]uint32, len(t))
	for i := range keys {
		keys[i] = uint32(i)
	}
	if _, err := m.BatchUpdate(keys, t, nil); err != nil {
		return fmt.Errorf("bpfpath: filling table %d: %w", key, err)
	}
	if err := d.objs.MaglevTables.Put(key, m); err != nil {
		return fmt.Errorf("bpfpath: swapping in table %d: %w", key, err)
	}
	return nil
}

// writeRouteSet makes a new route set map holding v's set and swaps it in
// for vip.
func (d *Datapath) writeRouteSet(vip netip.Addr, v *vipRoutes) error {
	m, err := ebpf.NewMap(d.routeSetSpec)
	if err != nil {
		return fmt.Errorf("bpfpath: creating the route set of VIP %s: %w", vip, err)
	}
	defer m.Close() // vip_routes holds its own reference
	if err := m.Put(uint32(0), &v.set); err != nil {
		return fmt.Errorf("bpfpath: filling the route set of VIP %s: %w", vip, err)
	}
	if err := d.objs.VipRoutes.Put(v.key, m); err != nil {
		return fmt.Errorf("bpfpath: swapping in the route set of VIP %s: %w", vip, err)
	}
	return nil
}
