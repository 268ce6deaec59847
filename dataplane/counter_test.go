package dataplane

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
	"github.com/sllbrd/sllbrd/model"
)

// endpointCounts returns the exported endpoint series by address.
func endpointCounts(e *Engine) map[string]Count {
	out := map[string]Count{}
	e.EachEndpoint(func(_ string, _ int, addr string, c Count) { out[addr] = c })
	return out
}

func routeNames(e *Engine) map[string]bool {
	out := map[string]bool{}
	e.EachRoute(func(route, _ string, _ Count) { out[route] = true })
	return out
}

func commit(t *testing.T, e *Engine, st *model.State) *Plan {
	t.Helper()
	p, err := e.Build(st)
	if err != nil {
		t.Fatal(err)
	}
	e.Commit(p)
	return p
}

// waitFor polls cond every 10 ms for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestChurnDoesNotGrowTheSeries: pods come and go, each with a new
// address; once the grace has passed only the endpoints and routes of the
// committed configuration are exported, with their totals kept.
func TestChurnDoesNotGrowTheSeries(t *testing.T) {
	e := NewEngine(WithFragments(1024, 10*time.Millisecond)) // grace 20 ms
	st := testState()
	commit(t, e, st)
	b := testpkt.Packet(flow(addr("10.0.0.1"), vip4, 6, 1000, 80), nil, testpkt.Options{})
	decide(e, b)
	for gen := range 200 {
		st.Generation = uint64(gen + 2)
		st.Services[0].Endpoints[4].Addr = netip.AddrFrom4([4]byte{169, 111, 101, byte(gen)})
		if gen == 100 {
			st.Routes = st.Routes[:1] // ns/empty goes
		}
		commit(t, e, st)
	}
	live := len(st.Services[0].Endpoints) + len(st.Services[1].Endpoints)
	waitFor(t, "the series of removed endpoints and routes to go", func() bool {
		return len(endpointCounts(e)) == live && len(routeNames(e)) == 1
	})
	if n := len(e.endpointCounters.ids); n != live {
		t.Errorf("%d endpoint counters kept, want %d", n, live)
	}
	var routePackets uint64
	e.EachRoute(func(route, _ string, c Count) { routePackets = c.Packets })
	if routePackets != 1 {
		t.Errorf("route ns/all counted %d packets after the churn, want 1", routePackets)
	}
}

// TestCounterIDsOutliveFragments: a removed endpoint's counter id stays
// its own while a fragment table entry may still name it, so a later
// fragment counts on the endpoint its first fragment went to, not on a new
// one; after the grace the id is reused, starting from zero.
func TestCounterIDsOutliveFragments(t *testing.T) {
	const lifetime = 500 * time.Millisecond
	e := NewEngine(WithFragments(1024, lifetime))
	st := testState()
	plan := commit(t, e, st)
	// Find a datagram that goes to endpoint 2 (IPv4 only: 169.111.100.12).
	var frags [][]byte
	for port := uint16(1); frags == nil; port++ {
		f := testpkt.Fragments(flow(addr("10.0.0.9"), vip4, 17, port, 5000), make([]byte, 2000), 1200, uint32(port))
		if d := decide(e, f[0]); d.Verdict == Accept && endpointOf(plan, d.Mark, true) == addr("169.111.100.12") {
			frags = f
		}
	}
	oldID := e.endpointCounters.ids["service-a\x002\x00169.111.100.12"]
	// Endpoint 2 is replaced by a pod with another address.
	st.Generation++
	st.Services[0].Endpoints[4].Addr = addr("169.111.100.42")
	commit(t, e, st)
	newID := e.endpointCounters.ids["service-a\x002\x00169.111.100.42"]
	if newID == oldID {
		t.Fatalf("the new endpoint took counter id %d while a fragment entry still names it", oldID)
	}
	if d := decide(e, frags[1]); d.Reason != ReasonFragmentFollowed {
		t.Fatalf("later fragment: %v", d.Reason)
	}
	counts := endpointCounts(e)
	if counts["169.111.100.12"].Packets != 2 || counts["169.111.100.42"].Packets != 0 {
		t.Errorf("later fragment counted on %v, want on the endpoint its first fragment went to", counts)
	}
	waitFor(t, "the removed endpoint's series to go", func() bool {
		_, found := endpointCounts(e)["169.111.100.12"]
		return !found
	})
	st.Generation++
	st.Services[0].Endpoints[4].Addr = addr("169.111.100.43")
	commit(t, e, st)
	if id := e.endpointCounters.ids["service-a\x002\x00169.111.100.43"]; id != oldID {
		t.Errorf("counter id %d not reused after the grace (new endpoint got %d)", oldID, id)
	}
	if c := endpointCounts(e)["169.111.100.43"]; c.Packets != 0 {
		t.Errorf("reused counter starts at %d packets, want 0", c.Packets)
	}
}

// TestCountersSumShards: decisions of concurrent readers, each with its own
// Decision and thus its own shard, add up exactly.
func TestCountersSumShards(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	b := testpkt.Packet(flow(addr("10.0.0.1"), vip4, 6, 1000, 80), nil, testpkt.Options{})
	const readers, each = 8, 500
	var wg sync.WaitGroup
	for range readers {
		d := NewDecision()
		wg.Go(func() {
			for range each {
				e.Decide(b, 100, 0, d)
			}
		})
	}
	wg.Wait()
	if p, by := e.ReasonCount(ReasonBalanced); p != readers*each || by != readers*each*100 {
		t.Errorf("balanced %d packets %d bytes, want %d and %d", p, by, readers*each, readers*each*100)
	}
	var total Count
	e.EachEndpoint(func(_ string, _ int, _ string, c Count) { total.Packets += c.Packets })
	if total.Packets != readers*each {
		t.Errorf("endpoint counters sum to %d, want %d", total.Packets, readers*each)
	}
	if len(e.shards) < 1 || len(e.shards)&(len(e.shards)-1) != 0 || len(e.shards) > maxShards {
		t.Errorf("%d shards: want a power of two up to %d", len(e.shards), maxShards)
	}
}
