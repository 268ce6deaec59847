package targetbfd

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/targetnet"
)

var (
	ip       = netip.MustParseAddr
	prefix   = netip.MustParsePrefix
	subnets  = []netip.Prefix{prefix("169.111.100.0/24"), prefix("fd00:111::/64")}
	bothNet1 = map[targetnet.Family]string{targetnet.IPv4: "net1", targetnet.IPv6: "net1"}
	podAddrs = Addresses{
		"lo":   {prefix("127.0.0.1/8"), prefix("20.0.0.1/32")},
		"net1": {prefix("169.111.100.11/24"), prefix("fd00:111::11/64"), prefix("fe80::1/64")},
		"net2": {prefix("169.111.200.11/24")},
	}
)

func gateway(name string, interval time.Duration, mult int, hops ...string) Gateway {
	g := Gateway{Name: name, Interval: interval, Multiplier: mult, Subnets: subnets, Interfaces: bothNet1}
	for _, h := range hops {
		g.NextHops = append(g.NextHops, ip(h))
	}
	return g
}

func key(peer, ifname string) bfd.Key { return bfd.Key{Peer: ip(peer), Interface: ifname} }

func TestSessionsOnePerNextHopWithTheGatewaysTiming(t *testing.T) {
	w := Sessions([]Gateway{gateway("sllb-a", 200*time.Millisecond, 4, "169.111.100.1", "169.111.100.2", "fd00:111::1")}, podAddrs)
	want := map[bfd.Key]bfd.SessionConfig{}
	for _, h := range []struct{ peer, local string }{{"169.111.100.1", "169.111.100.11"}, {"169.111.100.2", "169.111.100.11"},
		{"fd00:111::1", "fd00:111::11"}} {
		want[key(h.peer, "net1")] = bfd.SessionConfig{Peer: ip(h.peer), Local: ip(h.local), Interface: "net1",
			DesiredMinTx: 200 * time.Millisecond, RequiredMinRx: 200 * time.Millisecond, DetectMultiplier: 4}
	}
	if !maps.Equal(w.Sessions, want) || len(w.Unserved) != 0 || len(w.Notes) != 0 {
		t.Errorf("Sessions = %+v, want %+v", w, want)
	}
}

func TestSessionsANextHopOfTwoGatewaysTakesTheStricterTiming(t *testing.T) {
	// a's sessions would be on net1, b's on net2: the interface says whose won.
	for _, tc := range []struct {
		name     string
		a, b     Gateway
		interval time.Duration
		mult     uint8
		winner   string
	}{
		{"shorter detection wins", gateway("a", 100*time.Millisecond, 10, "169.111.100.1"), gateway("b", 300*time.Millisecond, 3, "169.111.100.1"),
			300 * time.Millisecond, 3, "net2"},
		{"shorter detection wins, first", gateway("a", 100*time.Millisecond, 3, "169.111.100.1"), gateway("b", 100*time.Millisecond, 5, "169.111.100.1"),
			100 * time.Millisecond, 3, "net1"},
		{"same detection: shorter interval", gateway("a", 200*time.Millisecond, 3, "169.111.100.1"), gateway("b", 100*time.Millisecond, 6, "169.111.100.1"),
			100 * time.Millisecond, 6, "net2"},
		{"equal: the first by name", gateway("z", 100*time.Millisecond, 3, "169.111.100.1"), gateway("m", 100*time.Millisecond, 3, "169.111.100.1"),
			100 * time.Millisecond, 3, "net2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.b.Interfaces = map[targetnet.Family]string{targetnet.IPv4: "net2"}
			for _, order := range [][]Gateway{{tc.a, tc.b}, {tc.b, tc.a}} {
				w := Sessions(order, podAddrs)
				if len(w.Sessions) != 1 {
					t.Fatalf("%d sessions, want one: %+v", len(w.Sessions), w.Sessions)
				}
				for _, s := range w.Sessions {
					if s.DesiredMinTx != tc.interval || s.RequiredMinRx != tc.interval || s.DetectMultiplier != tc.mult || s.Interface != tc.winner {
						t.Errorf("session %+v, want interval %v multiplier %d on %s", s, tc.interval, tc.mult, tc.winner)
					}
				}
			}
		})
	}
}

func TestSessionsSourceAddress(t *testing.T) {
	g := gateway("sllb-a", 100*time.Millisecond, 3, "169.111.100.1", "fd00:111::1")
	for _, tc := range []struct {
		name       string
		addrs      Addresses
		want4      netip.Addr
		want6      netip.Addr
		noteSubstr string
	}{
		{"one address per family in the subnets", podAddrs, ip("169.111.100.11"), ip("fd00:111::11"), ""},
		{"addresses unknown: the kernel chooses", nil, netip.Addr{}, netip.Addr{}, "not known"},
		{"two addresses in the subnet: the kernel chooses", Addresses{"net1": {prefix("169.111.100.11/24"), prefix("169.111.100.12/24"),
			prefix("fd00:111::11/64")}}, netip.Addr{}, ip("fd00:111::11"), "2 ipv4 addresses"},
		{"none in the subnets", Addresses{"net1": {prefix("10.0.0.1/24"), prefix("fd00:111::11/64")}}, netip.Addr{}, ip("fd00:111::11"), "no ipv4 address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Sessions([]Gateway{g}, tc.addrs)
			if got := w.Sessions[key("169.111.100.1", "net1")].Local; got != tc.want4 {
				t.Errorf("IPv4 source %v, want %v", got, tc.want4)
			}
			if got := w.Sessions[key("fd00:111::1", "net1")].Local; got != tc.want6 {
				t.Errorf("IPv6 source %v, want %v", got, tc.want6)
			}
			if notes := strings.Join(w.Notes, "\n"); (tc.noteSubstr == "") != (notes == "") || !strings.Contains(notes, tc.noteSubstr) {
				t.Errorf("notes %q, want one with %q", notes, tc.noteSubstr)
			}
			if len(w.Sessions) != 2 || len(w.Unserved) != 0 {
				t.Errorf("sessions %v, unserved %v", w.Sessions, w.Unserved)
			}
		})
	}
}

func TestSessionsWithoutInterfaceOrWithBadTimingAreUnserved(t *testing.T) {
	only4 := gateway("sllb-a", 100*time.Millisecond, 3, "169.111.100.1", "fd00:111::1")
	only4.Interfaces = map[targetnet.Family]string{targetnet.IPv4: "net1"}
	bad := gateway("sllb-b", 0, 3, "169.111.100.5")
	w := Sessions([]Gateway{only4, bad}, podAddrs)
	if len(w.Sessions) != 1 || w.Sessions[key("169.111.100.1", "net1")].Peer != ip("169.111.100.1") {
		t.Errorf("sessions %v, want only 169.111.100.1's", w.Sessions)
	}
	slices.SortFunc(w.Unserved, netip.Addr.Compare)
	if !slices.Equal(w.Unserved, []netip.Addr{ip("169.111.100.5"), ip("fd00:111::1")}) || len(w.Notes) != 2 {
		t.Errorf("unserved %v, notes %q", w.Unserved, w.Notes)
	}
}

func TestSessionsNoGatewayNoSession(t *testing.T) {
	if w := Sessions(nil, podAddrs); len(w.Sessions) != 0 || len(w.Unserved) != 0 {
		t.Errorf("Sessions(nil) = %+v", w)
	}
	if w := Sessions([]Gateway{gateway("sllb-a", time.Second, 3)}, podAddrs); len(w.Sessions) != 0 {
		t.Errorf("a Gateway without next hops: %+v", w)
	}
}
