package main

import (
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/liveness"
	"github.com/sllbrd/sllbrd/model"
)

// TestLivenessTargets: the API-ready endpoints of the Services whose
// liveness is on are probed, by their Service's probe kind; an address of
// two Services once per Service (Prober.Set and bfdLiveness.set keep the
// stricter Config), mapped addresses unmapped; the rest is not probed.
func TestLivenessTargets(t *testing.T) {
	st := livenessState()
	fast := model.Liveness{Interval: 50 * time.Millisecond, Multiplier: 3, HoldDown: time.Second}
	bfdFast := fast
	bfdFast.Probe = model.ProbeBFD
	st.Services = append(st.Services,
		model.Service{Name: "service-c", MaxEndpoints: 2, Liveness: fast,
			Endpoints: []model.Endpoint{{ID: 0, Addr: netip.AddrFrom16(addr12.As16()), Ready: true}}},
		model.Service{Name: "service-d", MaxEndpoints: 2, Liveness: bfdFast,
			Endpoints: []model.Endpoint{{ID: 1, Addr: addr11, Ready: true}, {ID: 0, Addr: addr13, Ready: false}}})
	services, probed, targets := livenessTargets(st)
	if want := map[string]model.Liveness{"service-a": defaultLiveness, "service-b": {}, "service-c": fast, "service-d": bfdFast}; !reflect.DeepEqual(services, want) {
		t.Errorf("services %v, want %v", services, want)
	}
	wantProbed := map[netip.Addr][]endpointRef{
		addr11: {{"service-a", 0}, {"service-d", 1}}, addr12: {{"service-a", 1}, {"service-c", 0}}, addr6: {{"service-a", 1}},
		netip.MustParseAddr("169.111.100.14"): {{"service-a", 3}},
	}
	if !reflect.DeepEqual(probed, wantProbed) {
		t.Errorf("probed %v, want %v", probed, wantProbed)
	}
	def := liveness.Config{Interval: 200 * time.Millisecond, Multiplier: 4, HoldDown: 5 * time.Second}
	fastCfg := liveness.Config{Interval: 50 * time.Millisecond, Multiplier: 3, HoldDown: time.Second}
	wantICMP := []liveness.Target{{Addr: addr11, Config: def}, {Addr: addr12, Config: def}, {Addr: addr6, Config: def},
		{Addr: netip.MustParseAddr("169.111.100.14"), Config: def}, {Addr: addr12, Config: fastCfg}}
	if !slices.Equal(targets.icmp, wantICMP) {
		t.Errorf("ICMP targets %v, want %v", targets.icmp, wantICMP)
	}
	if want := []liveness.Target{{Addr: addr11, Config: fastCfg}}; !slices.Equal(targets.bfd, want) {
		t.Errorf("BFD targets %v, want %v", targets.bfd, want)
	}
}

// TestLivenessViewState: an address's state is shown for the Services that
// probe it only.
func TestLivenessViewState(t *testing.T) {
	services, probed, _ := livenessTargets(livenessState())
	s := liveness.State{Addr: addr12, Alive: false}
	v := livenessView{services: services, probed: probed, states: map[netip.Addr]liveness.State{addr12: s}}
	if got, ok := v.state("service-a", netip.AddrFrom16(addr12.As16())); !ok || got != s {
		t.Errorf("service-a: %+v %v", got, ok)
	}
	if _, ok := v.state("service-b", addr12); ok {
		t.Error("service-b (liveness off) shows a state")
	}
	if _, ok := v.state("service-a", addr11); ok {
		t.Error("an address the prober does not hold shows a state")
	}
	if _, ok := (livenessView{}).state("service-a", addr12); ok {
		t.Error("an empty view shows a state")
	}
}
