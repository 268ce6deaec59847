package main

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// TestIntegrationRoutesSteerTraffic: priority, the tie-break, ports,
// protocols, source CIDRs and byte matches pick the right Service. service-a
// is t1..t3, service-b only t3, service-c only t2.
func TestIntegrationRoutesSteerTraffic(t *testing.T) {
	forEachDataplane(t, testIntegrationRoutesSteerTraffic)
}

func testIntegrationRoutesSteerTraffic(t *testing.T, mode string) {
	l := dataplaneLab(t, 1, mode)
	services := []e2e.Service{
		{Name: "service-a", Targets: []int{1, 2, 3}},
		{Name: "service-b", Targets: []int{3}},
		{Name: "service-c", Targets: []int{2}},
	}
	routes := append([]e2e.Route{
		{Name: "port-5005", Service: "service-b", Priority: 20, Fields: `protocols: [UDP], destinationPorts: ["5005"]`},
		{Name: "tcp-5006", Service: "service-c", Priority: 20, Fields: `protocols: [TCP], destinationPorts: ["5006"]`},
		// The lab client's requests start with "hello": 'h' = 0x68.
		{Name: "bytes-hit", Service: "service-c", Priority: 30, Fields: `protocols: [UDP], destinationPorts: ["5007"], byteMatches: ["udp[8:1] = 0x68"]`},
		{Name: "bytes-miss", Service: "service-b", Priority: 30, Fields: `protocols: [UDP], destinationPorts: ["5008"], byteMatches: ["udp[8:2] & 0xff00 = 0x0000"]`},
		{Name: "prio-high", Service: "service-b", Priority: 40, Fields: `protocols: [UDP], destinationPorts: ["5009"]`},
		{Name: "prio-low", Service: "service-c", Priority: 35, Fields: `protocols: [UDP], destinationPorts: ["5009"]`},
		{Name: "tie-b", Service: "service-b", Priority: 50, Fields: `protocols: [UDP], destinationPorts: ["5010"]`},
		{Name: "tie-a", Service: "service-c", Priority: 50, Fields: `protocols: [UDP], destinationPorts: ["5010"]`},
		{Name: "from-client-v4", Service: "service-b", Priority: 20,
			Fields: `protocols: [UDP], destinationPorts: ["5004"], sourceCIDRs: [10.100.0.0/24, "fd00:dead::/64"]`},
	}, webRoute...)
	startSllbrd(t, l, services, routes, 1)
	for _, tc := range []struct {
		name  string
		vip   netip.Addr
		proto string
		port  uint16
		want  []string // targets allowed
	}{
		{"port picks service-b", vip4, "udp", 5005, []string{"t3"}},
		{"port picks service-b v6", vip6, "udp", 5005, []string{"t3"}},
		{"protocol: TCP 5006 to service-c", vip4, "tcp", 5006, []string{"t2"}},
		{"protocol: UDP 5006 stays on service-a", vip4, "udp", 5006, []string{"t1", "t2", "t3"}},
		{"byte match holds", vip6, "udp", 5007, []string{"t2"}},
		{"byte match fails: falls to service-a", vip4, "udp", 5008, []string{"t1", "t2", "t3"}},
		{"higher priority wins", vip4, "udp", 5009, []string{"t3"}},
		{"equal priority: tie-a wins by name", vip6, "udp", 5010, []string{"t2"}},
		{"source CIDR matches the IPv4 client", vip4, "udp", 5004, []string{"t3"}},
		{"source CIDR excludes the IPv6 client", vip6, "udp", 5004, []string{"t1", "t2", "t3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lab.Distribution(flows(t, l, lab.FlowOptions{VIP: tc.vip, Proto: tc.proto, Port: tc.port, Count: 60}))
			for target := range got {
				if !slices.Contains(tc.want, target) {
					t.Fatalf("flows reached %v, want only %v", got, tc.want)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("flows reached %v, want all of %v", got, tc.want)
			}
		})
	}
}
