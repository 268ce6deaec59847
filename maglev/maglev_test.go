package maglev

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

func TestNewParamsRejectsSlotCount(t *testing.T) {
	for _, n := range []int{-1, 0, MaxSlots + 1} {
		if _, err := NewParams(n); err == nil {
			t.Errorf("NewParams(%d) succeeded, want an error", n)
		}
	}
}

func TestBuildRejectsWrongLength(t *testing.T) {
	p := mustParams(t, 4)
	for _, n := range []int{0, 3, 5} {
		if _, err := p.Build(make([]bool, n)); err == nil {
			t.Errorf("Build with %d flags for 4 slots succeeded, want an error", n)
		}
	}
}

// TestNoActiveSlot: an empty table (and a nil one) is a normal state.
func TestNoActiveSlot(t *testing.T) {
	tbl, err := Build(8, make([]bool, 8))
	if err != nil {
		t.Fatalf("Build with no active slot: %v", err)
	}
	var none *Table
	for _, tb := range []*Table{tbl, none} {
		for _, h := range flowHashes(100) {
			if slot, ok := tb.Lookup32(h); ok {
				t.Fatalf("Lookup(%#x) = %d, true on a table without active slots", h, slot)
			}
		}
	}
	if tbl.ActiveSlots() != 0 || tbl.Slots() != 8 || tbl.Size() != MinSize || tbl.Entries(0) != 0 {
		t.Errorf("empty table: active=%d slots=%d size=%d entries(0)=%d",
			tbl.ActiveSlots(), tbl.Slots(), tbl.Size(), tbl.Entries(0))
	}
}

// TestEntriesBalanced: only active slots own entries, each owns floor(M/A)
// or ceil(M/A) of them (max-min <= 1), and hashed flows only reach them.
func TestEntriesBalanced(t *testing.T) {
	probes := flowHashes(10000)
	for _, tc := range []struct {
		n      int
		active []int
		opts   []Option
	}{
		{n: 1, active: []int{0}},
		{n: 1, active: []int{0}, opts: []Option{WithSize(2)}},
		{n: 3, active: []int{0, 1, 2}},
		{n: 32, active: []int{5}},
		{n: 32, active: []int{0, 7, 31}, opts: []Option{WithSize(997)}},
		{n: 996, active: []int{0, 500, 995}, opts: []Option{WithSize(997)}},
		{n: 1000, active: []int{1, 2, 3, 10, 100, 999}},
	} {
		t.Run(fmt.Sprint(tc.n, tc.active), func(t *testing.T) {
			active := make([]bool, tc.n)
			for _, id := range tc.active {
				active[id] = true
			}
			tbl, err := Build(tc.n, active, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			checkTable(t, tbl, active, probes)
		})
	}
}

// checkTable asserts the balance and ownership invariants of tbl.
func checkTable(t *testing.T, tbl *Table, active []bool, probes []uint32) {
	t.Helper()
	a := 0
	for _, on := range active {
		if on {
			a++
		}
	}
	lo, hi := tbl.Size()/a, (tbl.Size()+a-1)/a
	total := 0
	for id, on := range active {
		got := tbl.Entries(id)
		total += got
		if on && (got < lo || got > hi) || !on && got != 0 {
			t.Fatalf("slot %d (active %v) owns %d entries, want %d..%d", id, on, got, lo, hi)
		}
	}
	if total != tbl.Size() || tbl.ActiveSlots() != a {
		t.Fatalf("entries %d of %d, active %d of %d", total, tbl.Size(), tbl.ActiveSlots(), a)
	}
	for _, h := range probes {
		if slot, ok := tbl.Lookup32(h); !ok || !active[slot] {
			t.Fatalf("Lookup(%#x) = %d, %v: want an active slot", h, slot, ok)
		}
	}
}

// TestFlowsBalanced: 1e5 hashed flows over 10 equal slots; every slot gets
// within 5% of its 10000 (about 5 standard deviations).
func TestFlowsBalanced(t *testing.T) {
	tbl := mustBuild(t, mustParams(t, 10), allActive(10))
	counts := make([]int, 10)
	for _, h := range flowHashes(100000) {
		slot, _ := tbl.Lookup32(h)
		counts[slot]++
	}
	lo, hi := slices.Min(counts), slices.Max(counts)
	t.Logf("flows per slot %v, max/min %.3f", counts, float64(hi)/float64(lo))
	if lo < 9500 || hi > 10500 {
		t.Errorf("flows per slot %v, want 9500..10500 each", counts)
	}
}

// TestTableDependsOnlyOnActiveIDs: tables built by independent Params, and
// by Params with more (inactive) slots, are identical for the same M and
// the same active identifiers.
func TestTableDependsOnlyOnActiveIDs(t *testing.T) {
	a := mustBuild(t, mustParams(t, 10, WithSize(997)), allActive(10, 4))
	b := mustBuild(t, mustParams(t, 10, WithSize(997)), allActive(10, 4))
	wide := allActive(40)
	for id := 10; id < 40; id++ {
		wide[id] = false
	}
	wide[4] = false
	c := mustBuild(t, mustParams(t, 40, WithSize(997)), wide)
	if !slices.Equal(a.entries, b.entries) || !slices.Equal(a.entries, c.entries) {
		t.Fatal("tables with the same M and active identifiers differ")
	}
	d := mustBuild(t, mustParams(t, 10, WithSize(1009)), allActive(10, 4))
	if slices.Equal(a.entries[:997], d.entries[:997]) {
		t.Fatal("tables of different sizes agree: M is not used")
	}
}

func TestLookupAllocatesNothing(t *testing.T) {
	tbl := mustBuild(t, mustParams(t, 32), allActive(32))
	var empty *Table
	hashes := flowHashes(64)
	allocs := testing.AllocsPerRun(100, func() {
		for _, h := range hashes {
			tbl.Lookup32(h)
			empty.Lookup32(h)
		}
	})
	if allocs != 0 {
		t.Errorf("Lookup: %v allocs, want 0", allocs)
	}
}

// TestConcurrentSwap: readers of an atomic.Pointer[Table] always see a
// complete table while a writer publishes new ones (run with -race).
func TestConcurrentSwap(t *testing.T) {
	const n, tables, readers = 16, 50, 2
	p := mustParams(t, n, WithSize(4099))
	var current atomic.Pointer[Table]
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan string, readers)
	hashes := flowHashes(256)
	for range readers {
		wg.Go(func() {
			for !stop.Load() {
				tbl := current.Load()
				for _, h := range hashes {
					slot, ok := tbl.Lookup32(h)
					if ok && tbl.Entries(slot) == 0 || !ok && tbl != nil && tbl.ActiveSlots() > 0 {
						errs <- fmt.Sprintf("Lookup = %d, %v on a table with %d active", slot, ok, tbl.ActiveSlots())
						return
					}
				}
			}
		})
	}
	for i := range tables {
		current.Store(mustBuild(t, p, everyKth(n, 1+i%5)))
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
