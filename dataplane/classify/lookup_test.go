package classify

import (
	"testing"

	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/model"
)

const (
	tcp  = model.ProtoTCP
	udp  = model.ProtoUDP
	sctp = model.ProtoSCTP
	vip  = "20.0.0.1"
	vip6 = "2001:db8::20"
)

func TestLookup(t *testing.T) {
	synSet := model.ByteMatch{Protocol: tcp, Offset: 13, Size: 1, Mask: 0x02, Value: 0x02}
	udpMagic := model.ByteMatch{Protocol: udp, Offset: 8, Size: 4, Mask: 0xffffffff, Value: 0xcafebabe}
	udpHalf := model.ByteMatch{Protocol: udp, Offset: 12, Size: 2, Mask: 0xff00, Value: 0x1200}
	tcpHdr := func(flags byte) []byte { h := make([]byte, 20); h[13] = flags; return h }
	udpPayload := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0xca, 0xfe, 0xba, 0xbe, 0x12, 0x34}

	tests := []struct {
		name   string
		routes []model.Route
		pkt    *packet.Packet
		want   string // winning route name; "" for no match
	}{
		{name: "single route", routes: []model.Route{route("a", 1, vip+"/32")},
			pkt: flow(tcp, "1.1.1.1", 1000, vip, 80), want: "a"},
		{name: "other destination", routes: []model.Route{route("a", 1, vip+"/32")},
			pkt: flow(tcp, "1.1.1.1", 1000, "20.0.0.2", 80)},
		{name: "higher priority wins",
			routes: []model.Route{route("low", 1, vip+"/32"), route("high", 10, vip+"/32", dports(ports(80, 80)))},
			pkt:    flow(tcp, "1.1.1.1", 1000, vip, 80), want: "high"},
		{name: "lower priority catches the rest",
			routes: []model.Route{route("low", 1, vip+"/32"), route("high", 10, vip+"/32", dports(ports(80, 80)))},
			pkt:    flow(tcp, "1.1.1.1", 1000, vip, 81), want: "low"},
		{name: "tie broken by name", routes: []model.Route{route("ns/b", 5, vip+"/32"), route("ns/a", 5, vip+"/32")},
			pkt: flow(tcp, "1.1.1.1", 1000, vip, 80), want: "ns/a"},
		{name: "tie broken by name, other order", routes: []model.Route{route("ns/a", 5, vip+"/32"), route("ns/b", 5, vip+"/32")},
			pkt: flow(tcp, "1.1.1.1", 1000, vip, 80), want: "ns/a"},
		{name: "range lower edge", routes: []model.Route{route("r", 1, vip+"/32", dports(ports(4000, 4010)))},
			pkt: flow(tcp, "1.1.1.1", 1, vip, 4000), want: "r"},
		{name: "range upper edge", routes: []model.Route{route("r", 1, vip+"/32", dports(ports(4000, 4010)))},
			pkt: flow(tcp, "1.1.1.1", 1, vip, 4010), want: "r"},
		{name: "below range", routes: []model.Route{route("r", 1, vip+"/32", dports(ports(4000, 4010)))},
			pkt: flow(tcp, "1.1.1.1", 1, vip, 3999)},
		{name: "above range", routes: []model.Route{route("r", 1, vip+"/32", dports(ports(4000, 4010)))},
			pkt: flow(tcp, "1.1.1.1", 1, vip, 4011)},
		{name: "second of several ranges", routes: []model.Route{route("r", 1, vip+"/32", dports(ports(4000, 4001), ports(80, 80)))},
			pkt: flow(tcp, "1.1.1.1", 1, vip, 80), want: "r"},
		{name: "any port is port 0 too", routes: []model.Route{route("r", 1, vip+"/32", dports(model.AnyPort))},
			pkt: flow(tcp, "1.1.1.1", 0, vip, 0), want: "r"},
		{name: "port 65535", routes: []model.Route{route("r", 1, vip+"/32", dports(ports(65535, 65535)))},
			pkt: flow(tcp, "1.1.1.1", 1, vip, 65535), want: "r"},
		{name: "source port in range", routes: []model.Route{route("r", 1, vip+"/32", sports(ports(1024, 2047)))},
			pkt: flow(tcp, "1.1.1.1", 2047, vip, 80), want: "r"},
		{name: "source port outside range", routes: []model.Route{route("r", 1, vip+"/32", sports(ports(1024, 2047)))},
			pkt: flow(tcp, "1.1.1.1", 2048, vip, 80)},
		{name: "source v4 inside", routes: []model.Route{route("r", 1, vip+"/32", srcs("10.0.0.0/8"))},
			pkt: flow(tcp, "10.9.9.9", 1, vip, 80), want: "r"},
		{name: "source v4 outside", routes: []model.Route{route("r", 1, vip+"/32", srcs("10.0.0.0/8"))},
			pkt: flow(tcp, "11.0.0.1", 1, vip, 80)},
		{name: "source v6 inside", routes: []model.Route{route("r", 1, vip6+"/128", srcs("fd00::/8"))},
			pkt: flow(tcp, "fd12::1", 1, vip6, 80), want: "r"},
		{name: "source v6 outside", routes: []model.Route{route("r", 1, vip6+"/128", srcs("fd00::/8"))},
			pkt: flow(tcp, "fe80::1", 1, vip6, 80)},
		{name: "dual stack route, v6 side",
			routes: []model.Route{route("r", 1, vip+"/32", dsts(vip+"/32", vip6+"/128"), srcs("10.0.0.0/8", "fd00::/8"))},
			pkt:    flow(tcp, "fd00::1", 1, vip6, 80), want: "r"},
		{name: "source falls through to lower priority",
			routes: []model.Route{route("narrow", 9, vip+"/32", srcs("10.0.0.0/8")), route("wide", 1, vip+"/32")},
			pkt:    flow(tcp, "192.168.0.1", 1, vip, 80), want: "wide"},
		{name: "protocol not in route", routes: []model.Route{route("r", 1, vip+"/32")},
			pkt: flow(udp, "1.1.1.1", 1, vip, 80)},
		{name: "sctp", routes: []model.Route{route("t", 5, vip+"/32"), route("s", 1, vip+"/32", protos(sctp, udp))},
			pkt: flow(sctp, "1.1.1.1", 1, vip, 80), want: "s"},
		{name: "byte match holds", routes: []model.Route{route("syn", 2, vip+"/32", bytematches(synSet)), route("all", 1, vip+"/32")},
			pkt: flow(tcp, "1.1.1.1", 1, vip, 80, tcpHdr(0x02)...), want: "syn"},
		{name: "byte match fails", routes: []model.Route{route("syn", 2, vip+"/32", bytematches(synSet)), route("all", 1, vip+"/32")},
			pkt: flow(tcp, "1.1.1.1", 1, vip, 80, tcpHdr(0x10)...), want: "all"},
		{name: "byte match on short L4 fails", routes: []model.Route{route("syn", 2, vip+"/32", bytematches(synSet))},
			pkt: flow(tcp, "1.1.1.1", 1, vip, 80, tcpHdr(0x02)[:13]...)},
		{name: "several statements all hold",
			routes: []model.Route{route("m", 1, vip+"/32", protos(udp), bytematches(udpMagic, udpHalf))},
			pkt:    flow(udp, "1.1.1.1", 1, vip, 80, udpPayload...), want: "m"},
		{name: "one of several statements fails",
			routes: []model.Route{route("m", 1, vip+"/32", protos(udp), bytematches(udpMagic, udpHalf))},
			pkt:    flow(udp, "1.1.1.1", 1, vip, 80, append(udpPayload[:12:12], 0x13, 0x34)...)},
		{name: "statement of another protocol does not apply",
			routes: []model.Route{route("m", 1, vip+"/32", protos(tcp, udp), bytematches(synSet))},
			pkt:    flow(udp, "1.1.1.1", 1, vip, 80), want: "m"},
		{name: "echo ignores protocols, ports and byte matches",
			routes: []model.Route{route("r", 1, vip+"/32", protos(udp), dports(ports(53, 53)), sports(ports(1, 1)), bytematches(udpMagic))},
			pkt:    withKind(packet.KindICMPEcho, flow(model.ProtoICMP, "1.1.1.1", 7, vip, 7)), want: "r"},
		{name: "echo takes the highest priority",
			routes: []model.Route{route("low", 1, vip+"/32"), route("high", 3, vip+"/32", protos(sctp))},
			pkt:    withKind(packet.KindICMPEcho, flow(model.ProtoICMP, "1.1.1.1", 7, vip, 7)), want: "high"},
		{name: "echo respects source CIDRs",
			routes: []model.Route{route("high", 3, vip6+"/128", srcs("fd00::/8")), route("low", 1, vip6+"/128")},
			pkt:    withKind(packet.KindICMPEcho, flow(model.ProtoICMPv6, "2001:db8::9", 7, vip6, 7)), want: "low"},
		{name: "echo to a non-VIP", routes: []model.Route{route("r", 1, vip+"/32")},
			pkt: withKind(packet.KindICMPEcho, flow(model.ProtoICMP, "1.1.1.1", 7, "20.0.0.9", 7))},
		{name: "icmp error classified as its flow",
			routes: []model.Route{route("r", 1, vip+"/32", dports(ports(80, 80)))},
			pkt:    withKind(packet.KindICMPError, flow(tcp, "1.1.1.1", 999, vip, 80)), want: "r"},
		{name: "first fragment", routes: []model.Route{route("r", 1, vip+"/32", protos(udp))},
			pkt: withKind(packet.KindFirstFragment, flow(udp, "1.1.1.1", 1, vip, 80)), want: "r"},
		{name: "later fragment never matches", routes: []model.Route{route("r", 1, vip+"/32", protos(udp))},
			pkt: withKind(packet.KindLaterFragment, flow(udp, "1.1.1.1", 0, vip, 0))},
		{name: "invalid packet never matches", routes: []model.Route{route("r", 1, vip+"/32")},
			pkt: withKind(packet.KindInvalid, flow(tcp, "1.1.1.1", 1, vip, 80))},
		{name: "other kind never matches", routes: []model.Route{route("r", 1, vip+"/32")},
			pkt: withKind(packet.KindOther, flow(tcp, "1.1.1.1", 1, vip, 80))},
		{name: "mapped route destination matches v4 packet", routes: []model.Route{route("r", 1, "::ffff:"+vip+"/128")},
			pkt: flow(tcp, "1.1.1.1", 1, vip, 80), want: "r"},
		{name: "mapped packet matches v4 route", routes: []model.Route{route("r", 1, vip+"/32", srcs("::ffff:10.0.0.0/104"))},
			pkt: flow(tcp, "::ffff:10.1.2.3", 1, "::ffff:"+vip, 80), want: "r"},
		{name: "v6 any does not admit v4", routes: []model.Route{route("r", 1, vip6+"/128", dsts(vip+"/32", vip6+"/128"), srcs("::/0", "10.0.0.0/8"))},
			pkt: flow(tcp, "11.1.1.1", 1, vip, 80)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, errs := Compile(tt.routes)
			if len(errs) > 0 {
				t.Fatalf("Compile: %v", errs)
			}
			if got := lookupName(table, tt.pkt); got != tt.want {
				t.Errorf("Lookup = %q, want %q", got, tt.want)
			}
			if got, want := refLookup(table.Routes(), tt.pkt), tt.want != ""; (got >= 0) != want {
				t.Errorf("reference lookup = %d, want match %v (the test case contradicts the specification)", got, want)
			}
		})
	}
}

func TestNilTableMatchesNothing(t *testing.T) {
	var table *Table
	if idx, ok := table.Lookup(flow(tcp, "1.1.1.1", 1, vip, 80)); ok {
		t.Fatalf("nil table matched route %d", idx)
	}
	if table.Len() != 0 {
		t.Fatalf("nil table Len = %d", table.Len())
	}
}

func TestIndexesFollowPrecedence(t *testing.T) {
	table, errs := Compile([]model.Route{
		route("ns/c", 5, vip+"/32"), route("ns/z", 9, vip+"/32"), route("ns/a", 5, vip+"/32"), route("ns/m", 1, vip+"/32"),
	})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := []string{"ns/z", "ns/a", "ns/c", "ns/m"}
	for i, name := range want {
		if table.Name(i) != name || table.Routes()[i].Name != name || table.Service(i) != "svc-"+name {
			t.Errorf("index %d = %q (service %q), want %q", i, table.Name(i), table.Service(i), name)
		}
	}
}

func TestRouteIsNormalisedCopy(t *testing.T) {
	in := route("r", 1, "::ffff:20.0.0.1/128",
		srcs("10.1.2.3/8", "10.0.0.0/8"), protos(tcp, tcp),
		dports(ports(90, 100), ports(80, 89), ports(200, 200)), sports(model.AnyPort))
	table, errs := Compile([]model.Route{in})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	got := table.Route(0)
	if got.Destinations[0].String() != "20.0.0.1/32" || len(got.Sources) != 1 || got.Sources[0].String() != "10.0.0.0/8" ||
		len(got.Protocols) != 1 || got.SourcePorts != nil ||
		len(got.DestinationPorts) != 2 || got.DestinationPorts[0] != ports(80, 100) {
		t.Fatalf("Route(0) = %+v", got)
	}
	got.DestinationPorts[0] = ports(1, 1)
	in.Destinations[0] = netip4("30.0.0.1/32")
	if lookupName(table, flow(tcp, "10.0.0.1", 1, vip, 85)) != "r" {
		t.Fatal("modifying the input or a returned Route changed the table")
	}
}
