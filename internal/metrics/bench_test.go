package metrics

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/model"
)

// largeState is services routes, each Service with endpoints IPv4 endpoints.
func largeState(services, endpoints int) *model.State {
	st := &model.State{Generation: 1}
	for s := range services {
		vip := netip.AddrFrom4([4]byte{20, 0, byte(s >> 8), byte(s)})
		name := fmt.Sprintf("svc-%d", s)
		st.Routes = append(st.Routes, model.Route{
			Name: "ns/" + name, Service: name, Priority: 1,
			Destinations: []netip.Prefix{netip.PrefixFrom(vip, 32)},
			Protocols:    []model.Protocol{model.ProtoTCP},
		})
		svc := model.Service{Name: name, MaxEndpoints: endpoints}
		for e := range endpoints {
			addr := netip.AddrFrom4([4]byte{10, byte(s >> 8), byte(s), byte(e)})
			svc.Endpoints = append(svc.Endpoints, model.Endpoint{ID: e, Addr: addr, Ready: true})
		}
		st.Services = append(st.Services, svc)
	}
	return st
}

// BenchmarkScrapeEngine gathers the engine's metrics for 64 Services of 32
// endpoints (2048 endpoint series pairs): the cost of one scrape.
func BenchmarkScrapeEngine(b *testing.B) {
	e := dataplane.NewEngine()
	plan, err := e.Build(largeState(64, 32))
	if err != nil || len(plan.Problems) != 0 {
		b.Fatal(err, plan.Problems)
	}
	e.Commit(plan)
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewEngineCollector(e))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
