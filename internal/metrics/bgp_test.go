package metrics

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

const bgpHeaders = `
# HELP sllbrd_bgp_prefixes_accepted Prefixes received from the BGP peer and accepted by import policy.
# TYPE sllbrd_bgp_prefixes_accepted gauge
# HELP sllbrd_bgp_prefixes_announced Prefixes announced to the BGP peer.
# TYPE sllbrd_bgp_prefixes_announced gauge
# HELP sllbrd_bgp_prefixes_received Prefixes received from the BGP peer.
# TYPE sllbrd_bgp_prefixes_received gauge
# HELP sllbrd_bgp_session_flaps_total Times the BGP session left Established.
# TYPE sllbrd_bgp_session_flaps_total counter
# HELP sllbrd_bgp_session_state BGP session FSM state: 1 for the current state, 0 for the others.
# TYPE sllbrd_bgp_session_state gauge
# HELP sllbrd_bgp_session_up Whether the BGP session is Established.
# TYPE sllbrd_bgp_session_up gauge
# HELP sllbrd_bgp_session_uptime_seconds How long the BGP session has been Established (0 when it is not).
# TYPE sllbrd_bgp_session_uptime_seconds gauge
`

func TestBGPCollector(t *testing.T) {
	established := BGPPeer{
		Peer: netip.MustParseAddr("2001:db8::fe"), Router: "gw-a", State: BGPStateEstablished,
		Established: true, Uptime: 90 * time.Second,
		PrefixesAnnounced: 3, PrefixesReceived: 5, PrefixesAccepted: 1, Flaps: 2,
	}
	odd := BGPPeer{Peer: netip.MustParseAddr("192.0.2.254"), Router: "gw-b", State: "mystery"}
	const a = `peer="2001:db8::fe",router="gw-a"`
	const b = `peer="192.0.2.254",router="gw-b"`
	for _, tc := range []struct {
		name  string
		peers []BGPPeer
		want  string
	}{
		{"no peers", nil, ""},
		{"established peer", []BGPPeer{established}, bgpHeaders + `
sllbrd_bgp_prefixes_accepted{` + a + `} 1
sllbrd_bgp_prefixes_announced{` + a + `} 3
sllbrd_bgp_prefixes_received{` + a + `} 5
sllbrd_bgp_session_flaps_total{` + a + `} 2
sllbrd_bgp_session_state{` + a + `,state="active"} 0
sllbrd_bgp_session_state{` + a + `,state="connect"} 0
sllbrd_bgp_session_state{` + a + `,state="established"} 1
sllbrd_bgp_session_state{` + a + `,state="idle"} 0
sllbrd_bgp_session_state{` + a + `,state="openconfirm"} 0
sllbrd_bgp_session_state{` + a + `,state="opensent"} 0
sllbrd_bgp_session_up{` + a + `} 1
sllbrd_bgp_session_uptime_seconds{` + a + `} 90
`},
		{"unknown state keeps its own series", []BGPPeer{odd}, bgpHeaders + `
sllbrd_bgp_prefixes_accepted{` + b + `} 0
sllbrd_bgp_prefixes_announced{` + b + `} 0
sllbrd_bgp_prefixes_received{` + b + `} 0
sllbrd_bgp_session_flaps_total{` + b + `} 0
sllbrd_bgp_session_state{` + b + `,state="active"} 0
sllbrd_bgp_session_state{` + b + `,state="connect"} 0
sllbrd_bgp_session_state{` + b + `,state="established"} 0
sllbrd_bgp_session_state{` + b + `,state="idle"} 0
sllbrd_bgp_session_state{` + b + `,state="mystery"} 1
sllbrd_bgp_session_state{` + b + `,state="openconfirm"} 0
sllbrd_bgp_session_state{` + b + `,state="opensent"} 0
sllbrd_bgp_session_up{` + b + `} 0
sllbrd_bgp_session_uptime_seconds{` + b + `} 0
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewBGPCollector(func() []BGPPeer { return tc.peers })
			if err := testutil.CollectAndCompare(c, strings.NewReader(tc.want)); err != nil {
				t.Fatal(err)
			}
		})
	}
}
