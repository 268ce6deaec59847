package metrics

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
	"github.com/sllbrd/sllbrd/model"
)

var (
	testVIP   = netip.MustParseAddr("20.0.0.1")
	testFlow  = testpkt.Flow{Src: netip.MustParseAddr("192.0.2.7"), Dst: testVIP, Proto: 17, SrcPort: 4000, DstPort: 53}
	testState = &model.State{
		Generation: 1,
		Routes: []model.Route{{
			Name: "ns/web", Service: "svc", Priority: 1,
			Destinations: []netip.Prefix{netip.PrefixFrom(testVIP, 32)},
			Protocols:    []model.Protocol{model.ProtoUDP},
		}},
		Services: []model.Service{{Name: "svc", MaxEndpoints: 2, Endpoints: []model.Endpoint{
			{ID: 0, Addr: netip.MustParseAddr("10.0.0.1"), Ready: true},
			{ID: 1, Addr: netip.MustParseAddr("10.0.0.2"), Ready: false},
		}}},
	}
)

// trafficEngine returns an engine that has seen one packet before its first
// configuration and then a known mix; the wire lengths passed to Decide are
// chosen so that every byte counter has a distinct, predictable value.
func trafficEngine(t *testing.T) *dataplane.Engine {
	t.Helper()
	e := dataplane.NewEngine()
	d := dataplane.NewDecision()
	udp := testpkt.Packet(testFlow, []byte("hello"), testpkt.Options{})
	e.Decide(udp, 50, 0, d) // not_configured
	plan, err := e.Build(testState)
	if err != nil || len(plan.Problems) != 0 {
		t.Fatalf("build: %v %v", err, plan.Problems)
	}
	e.Commit(plan)

	other := testFlow
	other.Dst = netip.MustParseAddr("20.0.0.9")
	frags := testpkt.Fragments(testFlow, make([]byte, 2000), 1000, 7)
	lonely := testpkt.Fragments(testFlow, make([]byte, 2000), 1000, 8)
	for _, p := range []struct {
		b       []byte
		wireLen int
		want    dataplane.Reason
	}{
		{udp, 100, dataplane.ReasonBalanced},
		{udp, 100, dataplane.ReasonBalanced},
		{testpkt.Packet(other, nil, testpkt.Options{}), 60, dataplane.ReasonNoRoute},
		{[]byte{0x45}, 1, dataplane.ReasonUndecodable},
		{frags[0], 1000, dataplane.ReasonBalanced},
		{frags[1], 1000, dataplane.ReasonFragmentFollowed},
		{lonely[1], 500, dataplane.ReasonFragmentHeld},
	} {
		e.Decide(p.b, p.wireLen, 1, d)
		if d.Reason != p.want {
			t.Fatalf("decision %v, want %v", d.Reason, p.want)
		}
	}
	if dropped := e.Expire(time.Now().Add(time.Minute), nil); len(dropped) != 1 {
		t.Fatalf("expired %v, want one token", dropped)
	}
	return e
}

const engineExposition = `
# HELP sllbrd_bytes_total Bytes (wire length) decided by the engine, by the reason of their verdict.
# TYPE sllbrd_bytes_total counter
sllbrd_bytes_total{reason="balanced"} 1200
sllbrd_bytes_total{reason="fragment_followed"} 1000
sllbrd_bytes_total{reason="fragment_held"} 500
sllbrd_bytes_total{reason="fragment_hold_limit"} 0
sllbrd_bytes_total{reason="fragment_unknown"} 0
sllbrd_bytes_total{reason="no_endpoint"} 0
sllbrd_bytes_total{reason="no_route"} 60
sllbrd_bytes_total{reason="not_configured"} 50
sllbrd_bytes_total{reason="undecodable"} 1
sllbrd_bytes_total{reason="unsupported"} 0
# HELP sllbrd_config_generation Generation of the configuration committed to the decision engine (0: none yet).
# TYPE sllbrd_config_generation gauge
sllbrd_config_generation 1
# HELP sllbrd_endpoint_bytes_total Bytes sent to an endpoint address (a removed endpoint's series is deleted after twice the fragment lifetime).
# TYPE sllbrd_endpoint_bytes_total counter
sllbrd_endpoint_bytes_total{address="10.0.0.1",id="0",service="svc"} 2200
sllbrd_endpoint_bytes_total{address="10.0.0.2",id="1",service="svc"} 0
# HELP sllbrd_endpoint_packets_total Packets sent to an endpoint address (a removed endpoint's series is deleted after twice the fragment lifetime).
# TYPE sllbrd_endpoint_packets_total counter
sllbrd_endpoint_packets_total{address="10.0.0.1",id="0",service="svc"} 4
sllbrd_endpoint_packets_total{address="10.0.0.2",id="1",service="svc"} 0
# HELP sllbrd_fragment_evictions_total Live fragment table entries pushed out by a full set.
# TYPE sllbrd_fragment_evictions_total counter
sllbrd_fragment_evictions_total 0
# HELP sllbrd_fragments_total Fragment table operations by result: hit and miss for later fragments, held and released or expired for later fragments parked before their first, stored for first fragments.
# TYPE sllbrd_fragments_total counter
sllbrd_fragments_total{result="expired"} 1
sllbrd_fragments_total{result="held"} 1
sllbrd_fragments_total{result="hit"} 1
sllbrd_fragments_total{result="miss"} 0
sllbrd_fragments_total{result="released"} 0
sllbrd_fragments_total{result="stored"} 1
# HELP sllbrd_packets_total Packets decided by the engine, by the reason of their verdict.
# TYPE sllbrd_packets_total counter
sllbrd_packets_total{reason="balanced"} 3
sllbrd_packets_total{reason="fragment_followed"} 1
sllbrd_packets_total{reason="fragment_held"} 1
sllbrd_packets_total{reason="fragment_hold_limit"} 0
sllbrd_packets_total{reason="fragment_unknown"} 0
sllbrd_packets_total{reason="no_endpoint"} 0
sllbrd_packets_total{reason="no_route"} 1
sllbrd_packets_total{reason="not_configured"} 1
sllbrd_packets_total{reason="undecodable"} 1
sllbrd_packets_total{reason="unsupported"} 0
# HELP sllbrd_route_bytes_total Bytes that matched a route (a removed route's series is deleted after twice the fragment lifetime).
# TYPE sllbrd_route_bytes_total counter
sllbrd_route_bytes_total{route="ns/web",service="svc"} 2200
# HELP sllbrd_route_packets_total Packets that matched a route (a removed route's series is deleted after twice the fragment lifetime).
# TYPE sllbrd_route_packets_total counter
sllbrd_route_packets_total{route="ns/web",service="svc"} 4
# HELP sllbrd_undecodable_packets_total Packets dropped as undecodable, by decode error.
# TYPE sllbrd_undecodable_packets_total counter
sllbrd_undecodable_packets_total{error="bad_ip_version"} 0
sllbrd_undecodable_packets_total{error="bad_ipv4_header_length"} 0
sllbrd_undecodable_packets_total{error="bad_ipv4_total_length"} 0
sllbrd_undecodable_packets_total{error="bad_ipv6_jumbo_payload_length"} 0
sllbrd_undecodable_packets_total{error="bad_ipv6_fragment_header_chain"} 0
sllbrd_undecodable_packets_total{error="too_many_ipv6_extension_headers"} 0
sllbrd_undecodable_packets_total{error="truncated"} 1
`

func TestEngineCollectorExposesLiveCounters(t *testing.T) {
	c := NewEngineCollector(trafficEngine(t))
	if err := testutil.CollectAndCompare(c, strings.NewReader(engineExposition)); err != nil {
		t.Fatal(err)
	}
}

func TestEngineCollectorBeforeConfiguration(t *testing.T) {
	c := NewEngineCollector(dataplane.NewEngine())
	for name, want := range map[string]int{
		"sllbrd_packets_total":             len(dataplane.Reasons()), // one per reason
		"sllbrd_route_packets_total":       0,
		"sllbrd_endpoint_packets_total":    0,
		"sllbrd_undecodable_packets_total": len(packet.Errors()), // one per decode error
		"sllbrd_fragments_total":           6,
		"sllbrd_config_generation":         1,
	} {
		if got := testutil.CollectAndCount(c, name); got != want {
			t.Errorf("%s: %d series, want %d", name, got, want)
		}
	}
}

func TestErrorLabel(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{"packet: bad IPv4 header length", "bad_ipv4_header_length"},
		{"packet: truncated", "truncated"},
		{"x: y: Too  many -- things!", "too_many_things"},
		{"plain", "plain"},
	} {
		if got := errorLabel(errString(tc.msg)); got != tc.want {
			t.Errorf("errorLabel(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }
