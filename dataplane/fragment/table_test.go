package fragment

import (
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func key(id uint32) Key {
	return Key{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("20.0.0.1"), Proto: 17, ID: id}
}

func TestLaterFragmentFollowsFirst(t *testing.T) {
	tb := New(64)
	out := NewTokens()
	tb.Remember(key(7), 42, t0, out)
	for _, k := range []Key{key(7), {Src: netip.MustParseAddr("fd00::1"), Dst: netip.MustParseAddr("fd00::2"), Proto: 17, ID: 7}} {
		out.Reset()
		v, found, held := tb.Lookup(k, t0.Add(time.Millisecond), false, 0, out)
		want := k == key(7)
		if found != want || (found && v != 42) || held {
			t.Errorf("Lookup(%v) = %d, found %v, held %v; want found %v value 42", k, v, found, held, want)
		}
	}
	if s := tb.Stats(); s.Hits != 1 || s.Misses != 1 || s.Stored != 1 {
		t.Errorf("stats = %+v, want 1 hit, 1 miss, 1 stored", s)
	}
}

func TestEarlyFragmentsHeldThenReleased(t *testing.T) {
	tb := New(64)
	out := NewTokens()
	for tok := uint64(1); tok <= MaxHeld+1; tok++ {
		_, found, held := tb.Lookup(key(9), t0, true, tok, out)
		if found || held != (tok <= MaxHeld) {
			t.Fatalf("token %d: found %v held %v", tok, found, held)
		}
	}
	out.Reset()
	tb.Remember(key(9), 5, t0.Add(time.Millisecond), out)
	want := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	if !slices.Equal(out.Release, want) || len(out.Drop) != 0 {
		t.Fatalf("released %v drop %v, want released %v", out.Release, out.Drop, want)
	}
	s := tb.Stats()
	if s.Held != MaxHeld || s.Released != MaxHeld || s.Misses != 1 {
		t.Errorf("stats = %+v", s)
	}
}

func TestExpiry(t *testing.T) {
	tb := New(64, WithLifetime(100*time.Millisecond))
	out := NewTokens()
	tb.Lookup(key(1), t0, true, 11, out)
	tb.Remember(key(2), 3, t0, out)
	if got := tb.Expire(t0.Add(50*time.Millisecond), nil); len(got) != 0 {
		t.Fatalf("expired early: %v", got)
	}
	got := tb.Expire(t0.Add(100*time.Millisecond), nil)
	if !slices.Equal(got, []uint64{11}) {
		t.Fatalf("expired %v, want [11]", got)
	}
	if _, found, _ := tb.Lookup(key(2), t0.Add(101*time.Millisecond), false, 0, out); found {
		t.Error("entry outlived its lifetime")
	}
	if s := tb.Stats(); s.Expired != 1 {
		t.Errorf("expired counter = %d, want 1", s.Expired)
	}
}

func TestEvictionHandsBackHeldTokens(t *testing.T) {
	tb := New(1) // 16 sets of 4: fill far beyond capacity
	out := NewTokens()
	var dropped []uint64
	n := uint32(tb.Capacity() * 4)
	for id := uint32(0); id < n; id++ {
		out.Reset()
		tb.Lookup(key(id), t0.Add(time.Duration(id)), true, uint64(id)+1, out)
		dropped = append(dropped, out.Drop...)
	}
	s := tb.Stats()
	if s.Evictions == 0 {
		t.Fatal("no evictions after overfilling the table")
	}
	// Every held token is either still parked or handed back exactly once.
	rest := tb.Expire(t0.Add(time.Hour), nil)
	all := append(dropped, rest...)
	slices.Sort(all)
	if uint32(len(all)) != n || len(slices.Compact(all)) != int(n) {
		t.Fatalf("tokens handed back: %d distinct of %d held", len(slices.Compact(all)), n)
	}
}

func TestConcurrentUse(t *testing.T) {
	tb := New(1024)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := NewTokens()
			for i := range 2000 {
				k := key(uint32(g*100000 + i))
				out.Reset()
				tb.Remember(k, uint64(i), t0, out)
				if v, ok, _ := tb.Lookup(k, t0, false, 0, out); ok && v != uint64(i) {
					t.Errorf("got %d want %d", v, i)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestZeroAllocs(t *testing.T) {
	tb := New(4096)
	out := NewTokens()
	id := uint32(0)
	allocs := testing.AllocsPerRun(1000, func() {
		id++
		out.Reset()
		tb.Lookup(key(id), t0, true, 1, out)
		tb.Remember(key(id), 1, t0, out)
		tb.Lookup(key(id), t0, false, 0, out)
	})
	if allocs != 0 {
		t.Fatalf("allocs per op = %v, want 0", allocs)
	}
}

func BenchmarkRememberLookup(b *testing.B) {
	tb := New(4096)
	out := NewTokens()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k := key(uint32(i))
		out.Reset()
		tb.Remember(k, 1, t0, out)
		tb.Lookup(k, t0, false, 0, out)
	}
}
