package main

import (
	"net/netip"
	"slices"

	"github.com/sllbrd/sllbrd/maglev"
	"github.com/sllbrd/sllbrd/model"
)

// withoutDead returns st as this SLLBR programs it: every endpoint whose
// address is in dead, in a Service whose liveness is on, not ready. Such an
// endpoint leaves the Service's Maglev table and keeps its identifier and
// fwmark, so it takes back the same entries when it is alive again. st is
// shared with the configuration source and never modified: the State and
// the Services that change are copies; without a change st itself is
// returned.
func withoutDead(st *model.State, dead map[netip.Addr]bool) *model.State {
	if len(dead) == 0 {
		return st
	}
	var out *model.State
	for i, svc := range st.Services {
		if svc.Liveness.Off() {
			continue
		}
		var eps []model.Endpoint
		for j, ep := range svc.Endpoints {
			if !ep.Ready || !dead[ep.Addr.Unmap()] {
				continue
			}
			if out == nil {
				cp := *st
				cp.Services = slices.Clone(st.Services)
				out = &cp
			}
			if eps == nil {
				eps = slices.Clone(svc.Endpoints)
				out.Services[i].Endpoints = eps
			}
			eps[j].Ready = false
		}
	}
	if out == nil {
		return st
	}
	return out
}

// tableMoves counts the Maglev table entries that change owner.
type tableMoves struct {
	needed   int // from or to an endpoint whose liveness changed
	needless int // between two endpoints whose liveness did not change
}

// livenessMoves compares, for each Service of st with liveness on and each
// address family, the Maglev table built with the dead set before and the
// one built with after (as the dataplane builds them: maglev.Build over the
// ready identifiers), so that a configuration change applied together does
// not count. Entries that move between two endpoints whose liveness did not
// change are Maglev's needless moves; the rest had to move. A family
// without any ready endpoint before or after moves nothing needlessly.
func livenessMoves(st *model.State, before, after map[netip.Addr]bool) tableMoves {
	var m tableMoves
	for _, svc := range st.Services {
		n := svc.MaxEndpoints
		if svc.Liveness.Off() || n < 1 || n > maglev.MaxSlots {
			continue
		}
		for _, is4 := range []bool{true, false} {
			was, now := make([]bool, n), make([]bool, n)
			seen := make([]bool, n)
			for _, ep := range svc.Endpoints {
				a := ep.Addr.Unmap()
				if ep.ID < 0 || ep.ID >= n || a.Is4() != is4 || seen[ep.ID] {
					continue // the dataplane skips them too
				}
				seen[ep.ID] = true
				was[ep.ID], now[ep.ID] = ep.Ready && !before[a], ep.Ready && !after[a]
			}
			if slices.Equal(was, now) {
				continue
			}
			m.add(entryMoves(n, was, now))
		}
	}
	return m
}

func (m *tableMoves) add(o tableMoves) {
	m.needed, m.needless = m.needed+o.needed, m.needless+o.needless
}

// entryMoves compares the tables of n slots with the active sets was and
// now. It cannot fail: n is within 1..maglev.MaxSlots and both sets have n
// flags (a failure would count nothing).
func entryMoves(n int, was, now []bool) tableMoves {
	old, err1 := maglev.Build(n, was)
	cur, err2 := maglev.Build(n, now)
	if err1 != nil || err2 != nil {
		return tableMoves{}
	}
	a, b := old.AppendEntrySlots(nil), cur.AppendEntrySlots(nil)
	var m tableMoves
	if len(a) == 0 || len(b) == 0 { // every entry is taken or given up: all needed
		m.needed = max(len(a), len(b))
		return m
	}
	for i := range a {
		switch {
		case a[i] == b[i]:
		case was[a[i]] != now[a[i]] || was[b[i]] != now[b[i]]:
			m.needed++
		default:
			m.needless++
		}
	}
	return m
}
