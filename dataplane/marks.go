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
// Marks are stable: a slot keeps its mark as long as it exists. A slot that
// leaves the configuration keeps its mark held (used, never given to another
// slot) until release frees it: packets in flight and remembered fragments
// may still carry it, and its routes stay programmed for a grace period. A
// held slot that comes back takes its mark back. New slots take marks from a
// cursor that moves round the range, so a freed mark is reused only after
// every other free mark was.
// A plan is a value: next() and release() return a new plan and leave the
// old one intact, so a configuration that fails to program leaves the
// committed plan as is.
type markPlan struct {
	first, count uint32
	cursor       uint32 // offset of the next mark to try
	byKey        map[endpointKey]uint32
	held         map[endpointKey]uint32 // slots gone from the configuration, mark not yet released
}

func newMarkPlan(first, count uint32) markPlan {
	return markPlan{first: first, count: count, byKey: map[endpointKey]uint32{}, held: map[endpointKey]uint32{}}
}

// next returns the plan for the slots in keys: existing and held slots keep
// their marks, vanished ones are held, new ones take free marks from the
// cursor on, in a deterministic order.
func (p markPlan) next(keys []endpointKey) (markPlan, error) {
	out := markPlan{first: p.first, count: p.count, cursor: p.cursor,
		byKey: make(map[endpointKey]uint32, len(keys)), held: make(map[endpointKey]uint32, len(p.held))}
	used := make(map[uint32]bool, len(keys)+len(p.held))
	var fresh []endpointKey
	for _, k := range keys {
		if m, ok := p.byKey[k]; ok {
			out.byKey[k] = m
		} else if m, ok := p.held[k]; ok {
			out.byKey[k] = m // came back before its mark was released
		} else {
			fresh = append(fresh, k)
			continue
		}
		used[out.byKey[k]] = true
	}
	for _, old := range []map[endpointKey]uint32{p.byKey, p.held} {
		for k, m := range old {
			if _, kept := out.byKey[k]; !kept {
				out.held[k] = m
				used[m] = true
			}
		}
	}
	if n := uint32(len(keys) + len(out.held)); n > p.count {
		return p, fmt.Errorf("out of fwmarks: %d endpoints need marks and %d marks of removed endpoints are held until their grace period ends, the range holds %d",
			len(keys), len(out.held), p.count)
	}
	sort.Slice(fresh, func(i, j int) bool {
		if fresh[i].service != fresh[j].service {
			return fresh[i].service < fresh[j].service
		}
		return fresh[i].id < fresh[j].id
	})
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

// release returns the plan with the held marks that keep does not want
// freed: from then on they may be given to new slots.
func (p markPlan) release(keep func(mark uint32) bool) markPlan {
	out := p
	out.held = make(map[endpointKey]uint32, len(p.held))
	for k, m := range p.held {
		if keep(m) {
			out.held[k] = m
		}
	}
	return out
}

// releaseMarks frees the committed plan's held marks that keep does not
// want (their routes are deleted or about to be).
func (e *Engine) releaseMarks(keep func(mark uint32) bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.marks = e.marks.release(keep)
}
