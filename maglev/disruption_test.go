package maglev

import (
	"fmt"
	"testing"
)

// maxExtraShare is the largest share of entries or flows allowed to move
// beyond those that must move when one endpoint is removed or added.
const maxExtraShare = 0.02

// extraMoves counts the probes that changed slot between before and after
// although neither the old nor the new slot is the changed one.
func extraMoves(before, after *Table, changed int, probes []uint32) (entries, flows float64) {
	moved := 0
	for i, old := range before.entries {
		if now := after.entries[i]; old != now && int(old) != changed && int(now) != changed {
			moved++
		}
	}
	entries = float64(moved) / float64(before.size)
	moved = 0
	for _, h := range probes {
		old, _ := before.Lookup32(h)
		now, _ := after.Lookup32(h)
		if old != now && old != changed && now != changed {
			moved++
		}
	}
	return entries, float64(moved) / float64(len(probes))
}

// everyKth returns n flags with every k-th slot active (k=1: all).
func everyKth(n, k int) []bool {
	active := make([]bool, n)
	for id := 0; id < n; id += k {
		active[id] = true
	}
	return active
}

// changedSlots picks up to five active slots to remove or add: both ends,
// the middle and two in between of the active ones.
func changedSlots(active []bool) []int {
	var on []int
	for id, ok := range active {
		if ok {
			on = append(on, id)
		}
	}
	a := len(on)
	seen := map[int]bool{}
	var ids []int
	for _, i := range []int{0, a / 4, a / 2, 3 * a / 4, a - 1} {
		if !seen[on[i]] {
			seen[on[i]] = true
			ids = append(ids, on[i])
		}
	}
	return ids
}

// without returns a copy of active with slot id cleared.
func without(active []bool, id int) []bool {
	less := append([]bool(nil), active...)
	less[id] = false
	return less
}

// TestDisruption removes one endpoint from, and adds one to, a Service, for
// several N with the default M, with all slots active and with sparse slots,
// and bounds the share of table entries and of 1e5 hashed flows that move
// although they belonged to neither the removed nor the added endpoint.
func TestDisruption(t *testing.T) {
	probes := flowHashes(100000)
	for _, tc := range []struct{ n, every int }{
		{3, 1}, {10, 1}, {32, 1}, {100, 1}, {150, 1}, {300, 1}, {1000, 1}, {32, 3}, {1000, 100},
	} {
		active := everyKth(tc.n, tc.every)
		t.Run(fmt.Sprintf("N=%d/every=%d", tc.n, tc.every), func(t *testing.T) {
			p := mustParams(t, tc.n)
			full := mustBuild(t, p, active)
			var worst [2][2]float64 // [remove, add][entries, flows]
			for _, id := range changedSlots(active) {
				less := mustBuild(t, p, without(active, id))
				re, rf := extraMoves(full, less, id, probes)
				ae, af := extraMoves(less, full, id, probes)
				for i, v := range []float64{re, rf, ae, af} {
					worst[i/2][i%2] = max(worst[i/2][i%2], v)
				}
			}
			t.Logf("N=%d active=%d M=%d needless moves: remove %.3f%% entries %.3f%% flows; add %.3f%% entries %.3f%% flows",
				tc.n, full.ActiveSlots(), p.Size(), 100*worst[0][0], 100*worst[0][1], 100*worst[1][0], 100*worst[1][1])
			for i, op := range []string{"remove", "add"} {
				for j, what := range []string{"entries", "flows"} {
					if worst[i][j] >= maxExtraShare {
						t.Errorf("%s one: %.2f%% of %s moved needlessly, want < %.0f%%",
							op, 100*worst[i][j], what, 100*maxExtraShare)
					}
				}
			}
		})
	}
}
