package manifest

import (
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/model"
)

// TestDeployExamples loads deploy/examples through the file source and checks
// the state a user of the examples gets.
func TestDeployExamples(t *testing.T) {
	u := nextUpdate(t, runSource(t, "../../deploy/examples"))
	if u.Err != nil || len(u.Problems) != 0 {
		t.Fatalf("examples: err %v, problems %v", u.Err, u.Problems)
	}
	s := u.State
	if s.Gateway.Namespace != "default" || s.Gateway.Name != "sllb-a" ||
		!slices.Equal(s.Gateway.Networks, []model.Network{{Name: "macvlan-nad-1", Interface: "net1"}}) {
		t.Errorf("gateway = %+v", s.Gateway)
	}
	wantVIPs := []netip.Addr{netip.MustParseAddr("20.0.0.1"), netip.MustParseAddr("2001:db8::1")}
	var got []netip.Addr
	for _, r := range s.Routes {
		for _, d := range r.Destinations {
			got = append(got, d.Addr())
		}
	}
	if !slices.Equal(got, wantVIPs) {
		t.Errorf("VIPs = %v, want %v", got, wantVIPs)
	}
	for _, r := range s.Routes {
		wantPorts := []model.PortRange{{From: 4000, To: 4000}, {From: 4001, To: 4001}}
		if r.Service != "service-a" || r.Priority != 10 || !slices.Equal(r.DestinationPorts, wantPorts) ||
			!slices.Equal(r.SourcePorts, []model.PortRange{model.AnyPort}) ||
			!slices.Equal(r.Protocols, []model.Protocol{model.ProtoTCP}) {
			t.Errorf("route %+v", r)
		}
	}
	if len(s.Services) != 1 || s.Services[0].Name != "service-a" || s.Services[0].MaxEndpoints != 32 {
		t.Fatalf("services = %+v", s.Services)
	}
	// Three dual-stack targets: identifiers 0, 1, 2 for both families; the
	// IPv6 address of the third is not ready.
	var ready []string
	for i, ep := range s.Services[0].Endpoints {
		if ep.ID != i/2 || ep.Addr.Is4() != (i%2 == 0) {
			t.Errorf("endpoint %d: %+v", i, ep)
		}
		if ep.Ready {
			ready = append(ready, ep.Addr.String())
		}
	}
	wantReady := []string{"169.111.100.11", "fd00:111::11", "169.111.100.12", "fd00:111::12", "169.111.100.13"}
	if len(s.Services[0].Endpoints) != 6 || !slices.Equal(ready, wantReady) {
		t.Errorf("endpoints = %+v, want 6 with %v ready", s.Services[0].Endpoints, wantReady)
	}
	if len(s.Routers) != 2 {
		t.Fatalf("routers = %+v", s.Routers)
	}
	r := s.Routers[0]
	wantBGP := model.BGP{LocalASN: 8103, RemoteASN: 4248829953, HoldTime: 24 * time.Second, LocalPort: 10179, RemotePort: 10179}
	wantBFD := model.BFD{Enabled: true, MinTx: 300 * time.Millisecond, MinRx: 300 * time.Millisecond, Multiplier: 5}
	if r.Name != "default/gateway-a-v4" || r.Address != netip.MustParseAddr("169.254.100.150") ||
		r.Interface != "vlan-100" || r.BGP == nil || !reflect.DeepEqual(*r.BGP, wantBGP) || r.BFD != wantBFD {
		t.Errorf("router %+v (BGP %+v)", r, r.BGP)
	}
	if s.Routers[1].Address != netip.MustParseAddr("fd00:169::150") {
		t.Errorf("IPv6 router %+v", s.Routers[1])
	}
}
