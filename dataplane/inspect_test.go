package dataplane

import (
	"net/netip"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
)

func TestInspectShowsTheCommittedConfiguration(t *testing.T) {
	if got := NewEngine().Inspect(); got.Generation != 0 || got.Routes != nil || got.Services != nil {
		t.Fatalf("before the first commit: %+v", got)
	}
	e, plan := newTestEngine(t, testState())
	for i := range 10 {
		decide(e, testpkt.Packet(flow(addr("10.0.0.1"), vip4, 6, uint16(1000+i), 80), nil, testpkt.Options{}))
	}
	in := e.Inspect()
	if in.Generation != 1 || len(in.Routes) != 2 || in.Routes[0].Route.Name != "ns/empty" || in.Routes[1].Route.Name != "ns/all" {
		t.Fatalf("routes not in precedence order: %+v", in.Routes)
	}
	if c := in.Routes[1].Count; c.Packets != 10 || !in.Routes[1].ServiceFound {
		t.Errorf("ns/all: %+v", in.Routes[1])
	}
	if len(in.Services) != 2 || in.Services[0].Name != "service-a" || in.Services[1].Name != "service-empty" {
		t.Fatalf("services: %+v", in.Services)
	}
	a := in.Services[0]
	if a.MaxEndpoints != 8 || !a.SCTPHashPorts || a.IPv4.ActiveSlots != 3 || a.IPv6.ActiveSlots != 3 || a.IPv4.Size != a.IPv6.Size {
		t.Errorf("service-a tables: %+v", a)
	}
	// Every endpoint of the plan appears with its mark, address and
	// readiness; the entries of each family add up to the table size.
	seen := 0
	entries := map[bool]int{}
	var packets uint64
	for _, ep := range a.Endpoints {
		for _, f := range []*EndpointFamilyView{ep.IPv4, ep.IPv6} {
			if f == nil {
				continue
			}
			seen++
			if got := endpointOf(plan, ep.Mark, f.Addr.Is4()); got != f.Addr || !f.Ready || f.Entries == 0 {
				t.Errorf("endpoint %d %+v: mark %#x routes to %v", ep.ID, f, ep.Mark, got)
			}
			entries[f.Addr.Is4()] += f.Entries
			packets += f.Count.Packets
		}
	}
	if seen != 6 || entries[true] != a.IPv4.Size || entries[false] != a.IPv6.Size || packets != 10 {
		t.Errorf("%d endpoint addresses, entries %v of %d, %d packets: %+v", seen, entries, a.IPv4.Size, packets, a.Endpoints)
	}
	if ep := a.Endpoints[2]; ep.ID != 2 || ep.IPv6 != nil || ep.IPv4 == nil || ep.IPv4.Addr != netip.MustParseAddr("169.111.100.12") {
		t.Errorf("IPv4-only endpoint 2: %+v", ep)
	}
	empty := in.Services[1]
	if len(empty.Endpoints) != 1 || empty.Endpoints[0].IPv4 == nil || empty.Endpoints[0].IPv4.Ready || empty.Endpoints[0].IPv4.Entries != 0 || empty.IPv4.ActiveSlots != 0 {
		t.Errorf("service-empty: %+v", empty)
	}
}

func TestInspectFragments(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	frags := testpkt.Fragments(flow(addr("10.0.0.9"), vip4, 17, 3333, 5000), make([]byte, 3000), 1200, 5)
	d := NewDecision()
	e.Decide(frags[1], len(frags[1]), 1, d) // a later fragment first: held
	if d.Verdict != Hold {
		t.Fatalf("later fragment: %v", d.Verdict)
	}
	v := e.InspectFragments(time.Now())
	if v.Entries != 1 || v.Held != 1 || v.Capacity < 16384 || v.Stats.Held != 1 || v.Lifetime != 2*time.Second {
		t.Fatalf("one datagram with a fragment held: %+v", v)
	}
	e.Decide(frags[0], len(frags[0]), 2, d)
	if v := e.InspectFragments(time.Now()); v.Entries != 1 || v.Held != 0 || v.Stats.Released != 1 {
		t.Fatalf("after its first fragment: %+v", v)
	}
}

// TestInspectWhileDeciding reads the engine (Inspect, Explain,
// InspectFragments) while a reader decides packets and the configuration
// changes: run with -race.
func TestInspectWhileDeciding(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	pkts := [][]byte{
		testpkt.Packet(flow(addr("10.0.0.1"), vip4, 6, 1000, 80), nil, testpkt.Options{}),
		testpkt.Packet(flow(addr("fd00::1"), vip6, 17, 1000, 7000), nil, testpkt.Options{}),
	}
	pkts = append(pkts, testpkt.Fragments(flow(addr("10.0.0.9"), vip4, 17, 3333, 5000), make([]byte, 3000), 1200, 5)...)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		d := NewDecision()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			b := pkts[i%len(pkts)]
			e.Decide(b, len(b), uint64(i), d)
		}
	}()
	pr := Probe{Protocol: 6, Src: netip.MustParseAddrPort("10.0.0.1:1"), Dst: netip.MustParseAddrPort("20.0.0.1:80")}
	for i := range 200 {
		st := testState()
		st.Generation = uint64(2 + i)
		st.Services[0].Endpoints[i%4].Ready = false
		p, err := e.Build(st)
		if err != nil {
			t.Fatal(err)
		}
		e.Commit(p)
		if in := e.Inspect(); in.Generation != st.Generation || len(in.Services) != 2 {
			t.Fatalf("inspect: generation %d, %d services", in.Generation, len(in.Services))
		}
		if _, err := e.Explain(pr); err != nil {
			t.Fatal(err)
		}
		e.InspectFragments(time.Now())
	}
	close(stop)
	<-done
}
