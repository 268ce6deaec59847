package main

import (
	"context"
	"testing"

	"github.com/sllbrd/sllbrd/dataplane"
)

// fakeKernelCounts counts one route and one endpoint address as the kernel
// path would.
type fakeKernelCounts struct{}

func (fakeKernelCounts) RouteCount(route, service string) dataplane.Count {
	if route == "default/web" && service == "service-a" {
		return dataplane.Count{Packets: 1000, Bytes: 64000}
	}
	return dataplane.Count{}
}

func (fakeKernelCounts) EndpointCount(service string, id int, addr string) dataplane.Count {
	if service == "service-a" && id == 1 && addr == "fd00:100::11" {
		return dataplane.Count{Packets: 700, Bytes: 44800}
	}
	return dataplane.Count{}
}

// TestShowAddsTheKernelPathsCounts: with the kernel path, show reports a
// route's and an endpoint's packets from both paths, as the metrics do.
func TestShowAddsTheKernelPathsCounts(t *testing.T) {
	ctx := context.Background()
	_, plain := goldenDaemon(t)
	_, withKernel := goldenDaemon(t, func(b *adminBackend) { b.kernel = fakeKernelCounts{} })
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
