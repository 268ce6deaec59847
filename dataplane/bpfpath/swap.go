package bpfpath

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
)

// swapIn makes the inner map of each of keys (newInner(i) for keys[i]) and
// puts them all into outer, a map of maps, in one batch update where the
// kernel takes one, else one at a time. The kernel waits for an RCU grace
// period after each update of a map of maps (so that no program still
// uses the old inner map when the call returns): a batch waits once, not
// once per map. It returns how many keys hold their new map.
func swapIn[K any](outer *ebpf.Map, keys []K, newInner func(i int) (*ebpf.Map, error)) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	inner := make([]*ebpf.Map, 0, len(keys))
	defer func() {
		for _, m := range inner {
			_ = m.Close() // outer holds its own references
		}
	}()
	fds := make([]uint32, 0, len(keys))
	for i := range keys {
		m, err := newInner(i)
		if err != nil {
			return 0, err
		}
		inner, fds = append(inner, m), append(fds, uint32(m.FD()))
	}
	n, err := outer.BatchUpdate(keys, fds, nil)
	if err == nil || !errors.Is(err, ebpf.ErrNotSupported) {
		if err != nil {
			return n, fmt.Errorf("swapping in %d inner maps (%d done): %w", len(keys), n, err)
		}
		return n, nil
	}
	for i := range keys {
		if err := outer.Put(keys[i], inner[i]); err != nil {
			return i, fmt.Errorf("swapping in inner map %d of %d: %w", i+1, len(keys), err)
		}
	}
	return len(keys), nil
}

// removeAll deletes keys from outer, a map of maps, in one batch where the
// kernel takes one (one RCU grace period; see swapIn), else one at a
// time; a key already gone is no error.
func removeAll[K any](outer *ebpf.Map, keys []K) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := outer.BatchDelete(keys, nil)
	if err == nil || !errors.Is(err, ebpf.ErrNotSupported) {
		return err
	}
	for _, k := range keys {
		if err := outer.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return err
		}
	}
	return nil
}

// newTable makes a table map holding t (key is for errors).
func (d *Datapath) newTable(key uint32, t []ingressTableEntry) (*ebpf.Map, error) {
	spec := d.tableSpec.Copy()
	spec.MaxEntries = uint32(len(t))
	m, err := ebpf.NewMap(spec)
	if err != nil {
		return nil, fmt.Errorf("creating table %d of %d entries: %w", key, len(t)-1, err)
	}
	keys := make([]uint32, len(t))
	for i := range keys {
		keys[i] = uint32(i)
	}
	if _, err := m.BatchUpdate(keys, t, nil); err != nil {
		_ = m.Close()
		return nil, fmt.Errorf("filling table %d: %w", key, err)
	}
	return m, nil
}

// newRouteSet makes a route set map holding v's set (vip is for errors).
func (d *Datapath) newRouteSet(vip netip.Addr, v *vipRoutes) (*ebpf.Map, error) {
	m, err := ebpf.NewMap(d.routeSetSpec)
	if err != nil {
		return nil, fmt.Errorf("creating the route set of VIP %s: %w", vip, err)
	}
	if err := m.Put(uint32(0), &v.set); err != nil {
		_ = m.Close()
		return nil, fmt.Errorf("filling the route set of VIP %s: %w", vip, err)
	}
	return m, nil
}
