package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/dataplane/route"
	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/internal/reconcile"
	"github.com/sllbrd/sllbrd/maglev"
	"github.com/sllbrd/sllbrd/model"
)

var (
	addr11 = netip.MustParseAddr("169.111.100.11")
	addr12 = netip.MustParseAddr("169.111.100.12")
	addr13 = netip.MustParseAddr("169.111.100.13")
	addr6  = netip.MustParseAddr("fd00:111::12")
)

// livenessState has service-a (liveness on; three IPv4 endpoints, one IPv6,
// 169.111.100.13 not ready in the API) behind VIP 20.0.0.1 and service-b
// (liveness off; the address 169.111.100.12 too) behind 20.0.0.2.
func livenessState() *model.State {
	vip := func(a string) []netip.Prefix { return []netip.Prefix{netip.MustParsePrefix(a)} }
	return &model.State{Generation: 1,
		Routes: []model.Route{
			{Name: "default/a", Service: "service-a", Priority: 1, Destinations: vip("20.0.0.1/32"), Protocols: []model.Protocol{model.ProtoUDP}},
			{Name: "default/b", Service: "service-b", Priority: 1, Destinations: vip("20.0.0.2/32"), Protocols: []model.Protocol{model.ProtoUDP}},
		},
		Services: []model.Service{
			{Name: "service-a", MaxEndpoints: 4, Liveness: defaultLiveness, Endpoints: []model.Endpoint{
				{ID: 0, Addr: addr11, Ready: true}, {ID: 1, Addr: addr12, Ready: true}, {ID: 1, Addr: addr6, Ready: true},
				{ID: 2, Addr: addr13, Ready: false}, {ID: 3, Addr: netip.MustParseAddr("169.111.100.14"), Ready: true},
			}},
			{Name: "service-b", MaxEndpoints: 2, Endpoints: []model.Endpoint{{ID: 0, Addr: addr12, Ready: true}}},
		},
	}
}

func readyFlags(st *model.State) map[string][]bool {
	out := map[string][]bool{}
	for _, s := range st.Services {
		for _, ep := range s.Endpoints {
			out[s.Name] = append(out[s.Name], ep.Ready)
		}
	}
	return out
}

// TestWithoutDead: a dead address is not ready in the Services whose
// liveness is on, in both its Services' copies only; the shared State is
// never modified; without a change the State itself is returned.
func TestWithoutDead(t *testing.T) {
	st := livenessState()
	orig := livenessState()
	if got := withoutDead(st, nil); got != st {
		t.Error("no dead set: a copy was made")
	}
	if got := withoutDead(st, map[netip.Addr]bool{netip.MustParseAddr("192.0.2.9"): true, addr13: true}); got != st {
		t.Error("dead addresses of no ready endpoint: a copy was made")
	}
	got := withoutDead(st, map[netip.Addr]bool{addr12: true, addr6: true})
	if want := map[string][]bool{"service-a": {true, false, false, false, true}, "service-b": {true}}; !reflect.DeepEqual(readyFlags(got), want) {
		t.Errorf("readiness %v, want %v", readyFlags(got), want)
	}
	if !reflect.DeepEqual(st, orig) {
		t.Errorf("the shared State was modified: %+v", st)
	}
	if &got.Services[1].Endpoints[0] != &st.Services[1].Endpoints[0] {
		t.Error("service-b, unchanged, was copied")
	}
	// IPv4-mapped endpoint addresses match the prober's unmapped ones.
	mapped := livenessState()
	mapped.Services[0].Endpoints[0].Addr = netip.AddrFrom16(addr11.As16())
	if r := readyFlags(withoutDead(mapped, map[netip.Addr]bool{addr11: true})); r["service-a"][0] {
		t.Errorf("a mapped address stayed ready: %v", r)
	}
}

// TestLivenessMoves: the entries a dead endpoint owned move (needed), and
// the few others Maglev moves are needless; the return moves the same
// entries back; a dead set that changes nothing ready moves nothing.
func TestLivenessMoves(t *testing.T) {
	st := livenessState()
	dead := map[netip.Addr]bool{addr12: true}
	down := livenessMoves(st, nil, dead)
	old, err := maglev.Build(4, []bool{true, true, false, true})
	if err != nil {
		t.Fatal(err)
	}
	cur, err := maglev.Build(4, []bool{true, false, false, true})
	if err != nil {
		t.Fatal(err)
	}
	a, b := old.AppendEntrySlots(nil), cur.AppendEntrySlots(nil)
	differ := 0
	for i := range a {
		if a[i] != b[i] {
			differ++
		}
	}
	if down.needed != old.Entries(1) || down.needed+down.needless != differ {
		t.Errorf("down: %+v; want needed = its %d entries, needed+needless = the %d entries that differ", down, old.Entries(1), differ)
	}
	if up := livenessMoves(st, dead, nil); up != down {
		t.Errorf("up %+v, want the same as down %+v", up, down)
	}
	t.Logf("one of 3 endpoints dead in a table of %d entries: %d needed, %d needless moves (%.2f%% of the table)",
		old.Size(), down.needed, down.needless, 100*float64(down.needless)/float64(old.Size()))
	if m := livenessMoves(st, nil, map[netip.Addr]bool{addr13: true}); m != (tableMoves{}) {
		t.Errorf("an address not ready in the API moved %+v", m)
	}
	// The IPv6 family's only endpoint: its whole table goes, all needed.
	if m := livenessMoves(st, nil, map[netip.Addr]bool{addr6: true}); m.needless != 0 || m.needed != old.Size() {
		t.Errorf("the last IPv6 endpoint: %+v, want %d needed", m, old.Size())
	}
}

// recordingEngine programs states into a real engine, which decides what is
// served, and records them.
type recordingEngine struct {
	mu     sync.Mutex
	engine *dataplane.Engine
	states []*model.State
}

func (r *recordingEngine) Apply(st *model.State, _ []route.Nexthop) (dataplane.Applied, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	plan, err := r.engine.Build(st)
	if err != nil {
		return dataplane.Applied{}, err
	}
	r.engine.Commit(plan)
	r.states = append(r.states, st)
	return dataplane.Applied{Generation: st.Generation, VIPs: plan.VIPs, ServedVIPs: plan.ServedVIPs}, nil
}

func (r *recordingEngine) last() *model.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.states) == 0 {
		return nil
	}
	return r.states[len(r.states)-1]
}

// TestApplierProgramsLiveEndpoints: through the reconcile loop, the dead set
// takes endpoints out of what is programmed (never out of the source's
// State), a VIP whose Service has no live endpoint left is withdrawn and
// announced again when one comes back, and the moves are counted.
func TestApplierProgramsLiveEndpoints(t *testing.T) {
	routing := &fakeRouting{}
	eng := &recordingEngine{engine: dataplane.NewEngine()}
	var moves []tableMoves
	var movesMu sync.Mutex
	a := &applier{log: slog.New(slog.NewTextHandler(io.Discard, nil)), dataplane: eng, routing: routing,
		metrics: metrics.NewConfig(), problems: func(int) {},
		moved: func(m tableMoves) { movesMu.Lock(); moves = append(moves, m); movesMu.Unlock() }}
	loop := reconcile.New(a.apply, reconcile.WithMinInterval(time.Millisecond))
	loop.SetGateways(harnessGateways)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = loop.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	st := livenessState()
	st.Services[0].Endpoints = slices.Delete(st.Services[0].Endpoints, 4, 5) // 169.111.100.11 and .12 (and fd00:111::12)
	loop.SetState(st, time.Now())
	vip1, vip2 := netip.MustParseAddr("20.0.0.1"), netip.MustParseAddr("20.0.0.2")
	announced := func(want ...netip.Addr) func() bool {
		return func() bool { _, last := routing.state(); return slices.Equal(last, want) }
	}
	eventually(t, "both VIPs announced", announced(vip1, vip2))
	steps := []struct {
		dead     []netip.Addr
		ready    []bool // service-a's endpoints as programmed
		vips     []netip.Addr
		needless bool // moves may be needless (a table with live endpoints on both sides)
	}{
		{[]netip.Addr{addr12}, []bool{true, false, true, false}, []netip.Addr{vip1, vip2}, true},
		{[]netip.Addr{addr11, addr12}, []bool{false, false, true, false}, []netip.Addr{vip2}, false},
		{nil, []bool{true, true, true, false}, []netip.Addr{vip1, vip2}, false},
	}
	for i, s := range steps {
		dead := map[netip.Addr]bool{}
		for _, a := range s.dead {
			dead[a] = true
		}
		loop.SetDead(dead)
		programmed := func() bool {
			got := readyFlags(eng.last())
			return slices.Equal(got["service-a"], s.ready) && slices.Equal(got["service-b"], []bool{true})
		}
		eventually(t, fmt.Sprintf("step %d: service-a programmed %v, service-b [true]", i+1, s.ready), programmed)
		eventually(t, fmt.Sprintf("step %d: the VIPs announced", i+1), announced(s.vips...))
		eventually(t, fmt.Sprintf("step %d: the moves counted", i+1), func() bool {
			movesMu.Lock()
			defer movesMu.Unlock()
			return len(moves) >= i+1
		})
		movesMu.Lock()
		if len(moves) != i+1 || moves[i].needed == 0 || (!s.needless && moves[i].needless != 0) {
			t.Errorf("step %d: moves %+v", i+1, moves)
		}
		movesMu.Unlock()
	}
	if !reflect.DeepEqual(readyFlags(st), map[string][]bool{"service-a": {true, true, true, false}, "service-b": {true}}) {
		t.Errorf("the source's State was modified: %v", readyFlags(st))
	}
}
