package bench

import (
	"fmt"
	"net/netip"

	"github.com/sllbrd/sllbrd/model"
)

// State is the configuration the mixes are decided against: web (TCP 80,
// 443), a UDP range, SCTP, each on every VIP, over 32-slot Services with 10
// dual-stack endpoints each.
func State() *model.State {
	var dsts []netip.Prefix
	for _, v := range append(append([]netip.Addr{}, VIP4...), VIP6...) {
		dsts = append(dsts, netip.PrefixFrom(v, v.BitLen()))
	}
	st := &model.State{Generation: 1, Routes: []model.Route{
		{Name: "bench/web", Service: "web", Priority: 10, Destinations: dsts,
			Protocols:        []model.Protocol{model.ProtoTCP},
			DestinationPorts: []model.PortRange{{From: 80, To: 80}, {From: 443, To: 443}}},
		{Name: "bench/udp", Service: "udp", Priority: 10, Destinations: dsts,
			Protocols:        []model.Protocol{model.ProtoUDP},
			DestinationPorts: []model.PortRange{{From: 5000, To: 5100}}},
		{Name: "bench/sctp", Service: "sctp", Priority: 10, Destinations: dsts,
			Protocols: []model.Protocol{model.ProtoSCTP}},
		{Name: "bench/dns-like", Service: "udp", Priority: 20, Destinations: dsts,
			Protocols:        []model.Protocol{model.ProtoUDP},
			DestinationPorts: []model.PortRange{{From: 5000, To: 5000}},
			ByteMatches:      []model.ByteMatch{{Protocol: model.ProtoUDP, Offset: 8, Size: 1, Mask: 0x80, Value: 0x80}}},
	}}
	for s, name := range []string{"web", "udp", "sctp"} {
		svc := model.Service{Name: name, MaxEndpoints: 32, SCTPHashPorts: true}
		for id := range 10 {
			svc.Endpoints = append(svc.Endpoints,
				model.Endpoint{ID: id, Addr: netip.MustParseAddr(fmt.Sprintf("169.111.%d.%d", 100+s, 10+id)), Ready: true},
				model.Endpoint{ID: id, Addr: netip.MustParseAddr(fmt.Sprintf("fd00:111:%d::%d", s, 10+id)), Ready: true})
		}
		st.Services = append(st.Services, svc)
	}
	return st
}
