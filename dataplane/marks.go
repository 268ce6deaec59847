package dataplane

import (
	"fmt"
	"sort"
)

// endpointKey names one endpoint slot of one Service.
type endpointKey struct {
	service string
	id      int
}

// markPlan assigns each endpoint slot an fwmark from [first, first+count).
// Marks are stable: a slot keeps its mark as long as it exists. New slots take
// marks from a cursor that moves round the range, so a freed mark is reused
// only after every other free mark was: a reload never re-points a mark that
// packets in flight or remembered fragments carry to another endpoint.
// A plan is a value: next() returns a new plan and leaves the old one intact,
// so a configuration that fails to program leaves the committed plan as is.
type markPlan struct {
	first, count uint32
	cursor       uint32 // offset of the next mark to try
	byKey        map[endpointKey]uint32
}

func newMarkPlan(first, count uint32) markPlan {
	return markPlan{first: first, count: count, byKey: map[endpointKey]uint32{}}
}

// next returns the plan for the slots in keys: existing slots keep their
// marks, vanished ones free theirs, new ones take free marks from the cursor
// on, in a deterministic order.
func (p markPlan) next(keys []endpointKey) (markPlan, error) {
	out := markPlan{first: p.first, count: p.count, cursor: p.cursor, byKey: make(map[endpointKey]uint32, len(keys))}
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
	if uint32(len(keys)) > p.count {
		return p, fmt.Errorf("out of fwmarks: %d endpoints need marks, the range holds %d", len(keys), p.count)
	}
	for _, k := range fresh {
		for used[p.first+out.cursor] {
			out.cursor = (out.cursor + 1) % p.count
		}
		m := p.first + out.cursor
		out.byKey[k] = m
		used[m] = true
		out.cursor = (out.cursor + 1) % p.count
	}
	return out, nil
}
