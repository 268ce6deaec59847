package main

import (
	"context"
	"slices"
	"testing"

	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/internal/admin"
)

// fakeKernelCounts is the engine's counters with one route's and one
// endpoint address's kernel counts added, as dataplane.KernelStats adds
// the kernel path's; reads counts its calls, each of which is one read of
// the kernel's counters (a netlink dump) in KernelStats.
type fakeKernelCounts struct {
	engine *dataplane.Engine
	reads  int
}

func (f *fakeKernelCounts) EachRoute(fn func(route, service string, c dataplane.Count)) {
	f.reads++
	f.engine.EachRoute(func(route, service string, c dataplane.Count) {
		if route == "default/web" && service == "service-a" {
			c.Packets, c.Bytes = c.Packets+1000, c.Bytes+64000
		}
		fn(route, service, c)
	})
}

func (f *fakeKernelCounts) EachEndpoint(fn func(service string, id int, addr string, c dataplane.Count)) {
	f.reads++
	f.engine.EachEndpoint(func(service string, id int, addr string, c dataplane.Count) {
		if service == "service-a" && id == 1 && addr == "fd00:100::11" {
			c.Packets, c.Bytes = c.Packets+700, c.Bytes+44800
		}
		fn(service, id, addr, c)
	})
}

// TestShowAddsTheKernelPathsCounts: with the kernel path, show reports a
// route's and an endpoint's packets from both paths, as the metrics do.
func TestShowAddsTheKernelPathsCounts(t *testing.T) {
	ctx := context.Background()
	_, plain := goldenDaemon(t)
	kernel := &fakeKernelCounts{}
	_, withKernel := goldenDaemon(t, func(b *adminBackend) { kernel.engine = b.engine; b.kernel = kernel })
	r0, err := plain.Routes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := withKernel.Routes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range r0.Routes {
		want := r0.Routes[i].Packets
		if r0.Routes[i].Name == "default/web" {
			want += 1000
		}
		if r1.Routes[i].Packets != want {
			t.Errorf("route %s: %d packets, want %d", r1.Routes[i].Name, r1.Routes[i].Packets, want)
		}
	}
	s0, err := plain.Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s1, err := withKernel.Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for i, svc := range s1.Services {
		for j, ep := range svc.Endpoints {
			if ep.IPv6 == nil {
				continue
			}
			want := s0.Services[i].Endpoints[j].IPv6.Bytes
			if svc.Name == "service-a" && ep.ID == 1 {
				want, found = want+44800, true
			}
			if ep.IPv6.Bytes != want {
				t.Errorf("%s endpoint %d %s: %d bytes, want %d", svc.Name, ep.ID, ep.IPv6.Address, ep.IPv6.Bytes, want)
			}
		}
	}
	if !found {
		t.Fatal("the golden state has no service-a endpoint 1 with an IPv6 address")
	}
}

// TestShowReadsTheKernelsCountersOncePerRequest: show services and show
// routes read the kernel's counters once per request, however many
// endpoint addresses and routes they show (one read per address made show
// time out at 1,000 dual-stack endpoints).
func TestShowReadsTheKernelsCountersOncePerRequest(t *testing.T) {
	ctx := context.Background()
	kernel := &fakeKernelCounts{}
	_, b := goldenDaemon(t, func(b *adminBackend) { kernel.engine = b.engine; b.kernel = kernel })
	for range 2 {
		before := kernel.reads
		svcs, err := b.Services(ctx)
		if err != nil {
			t.Fatal(err)
		}
		addresses := 0
		for _, svc := range svcs.Services {
			for _, ep := range svc.Endpoints {
				addresses += len(slices.DeleteFunc([]*admin.EndpointAddress{ep.IPv4, ep.IPv6}, func(a *admin.EndpointAddress) bool { return a == nil }))
			}
		}
		if addresses < 4 || kernel.reads-before != 1 {
			t.Errorf("show services of %d endpoint addresses read the kernel's counters %d times, want once (and at least 4 addresses)", addresses, kernel.reads-before)
		}
		before = kernel.reads
		routes, err := b.Routes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(routes.Routes) < 2 || kernel.reads-before != 1 {
			t.Errorf("show routes of %d routes read the kernel's counters %d times, want once (and at least 2 routes)", len(routes.Routes), kernel.reads-before)
		}
	}
}
