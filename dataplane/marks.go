package dataplane

import (
	"fmt"
	"maps"
	"sort"
)

// endpointKey names one endpoint slot of one Service.
type endpointKey struct {
	service string
	id      int
}

// markPlan assigns each endpoint slot an fwmark from [first, first+count).
// Marks are stable: a slot keeps its mark as long as it exists, so a reload
// never re-points a mark that packets in flight carry to another endpoint.
// A plan is a value: next() returns a new plan and leaves the old one intact,
// so a configuration that fails to program leaves the committed plan as is.
type markPlan struct {
	first, count uint32
	byKey        map[endpointKey]uint32
}

func newMarkPlan(first, count uint32) markPlan {
	return markPlan{first: first, count: count, byKey: map[endpointKey]uint32{}}
}

// next returns the plan for the slots in keys: existing slots keep their
// marks, vanished ones free theirs, new ones take the lowest free marks in
// a deterministic order.
func (p markPlan) next(keys []endpointKey) (markPlan, error) {
	out := markPlan{first: p.first, count: p.count, byKey: make(map[endpointKey]uint32, len(keys))}
	used := make(map[uint32]bool, len(keys))
	var fresh []endpointKey
	for _, k := range keys {
		if m, ok := p.byKey[k]; ok {
			out.byKey[k] = m
			used[m] = true
		} else {
			fresh = append(fresh, k)
		}
	}
	sort.Slice(fresh, func(i, j int) bool {
		if fresh[i].service != fresh[j].service {
			return fresh[i].service < fresh[j].service
		}
		return fresh[i].id < fresh[j].id
	})
	m := p.first
	for _, k := range fresh {
		for used[m] && m < p.first+p.count {
			m++
		}
		if m >= p.first+p.count {
			return p, fmt.Errorf("out of fwmarks: %d endpoints need marks, the range holds %d", len(keys), p.count)
		}
		out.byKey[k] = m
		used[m] = true
	}
	return out, nil
}

func (p markPlan) clone() markPlan {
	p.byKey = maps.Clone(p.byKey)
	return p
}
