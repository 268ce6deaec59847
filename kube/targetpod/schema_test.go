package targetpod

import (
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/model/vip"
)

func gw(name string, vips ...string) Gateway {
	g := Gateway{Name: name, Subnets: []netip.Prefix{netip.MustParsePrefix("169.111.100.0/24"), netip.MustParsePrefix("fd00:111::/64")},
		NextHops: NextHops{IPv4: []netip.Addr{netip.MustParseAddr("169.111.100.2"), netip.MustParseAddr("169.111.100.1")},
			IPv6: []netip.Addr{netip.MustParseAddr("fd00:111::1")}}}
	for _, v := range vips {
		g.VIPs = append(g.VIPs, netip.MustParsePrefix(v))
	}
	return g
}

// The documented example of docs/target.md.
const example = `{"version":1,"generation":1,"gateways":[{"name":"sllb-a","table":50000,"subnets":["169.111.100.0/24","fd00:111::/64"],"vips":["20.0.0.1/32","2001:db8::1/128"],"nextHops":{"ipv4":["169.111.100.1","169.111.100.2"],"ipv6":["fd00:111::1"]}}]}`

func TestNextWritesTheDocumentedForm(t *testing.T) {
	value, changed, err := Next("", []Gateway{gw("sllb-a", "2001:db8::1/128", "20.0.0.1/32")})
	if err != nil || !changed || value != example {
		t.Fatalf("Next from nothing = %s, %v, %v\nwant %s", value, changed, err, example)
	}
	d, err := ParseDesired(value)
	if err != nil {
		t.Fatal(err)
	}
	want := targetnet.Gateway{Name: "sllb-a", Table: 50000, Subnets: gw("").Subnets,
		VIPs:     []netip.Prefix{netip.MustParsePrefix("20.0.0.1/32"), netip.MustParsePrefix("2001:db8::1/128")},
		NextHops: []netip.Addr{netip.MustParseAddr("169.111.100.1"), netip.MustParseAddr("169.111.100.2"), netip.MustParseAddr("fd00:111::1")}}
	if got := d.Net(); len(got.Gateways) != 1 || !equalGateway(got.Gateways[0], want) {
		t.Errorf("Net = %+v, want %+v", got, want)
	}
}

func equalGateway(a, b targetnet.Gateway) bool {
	return (Desired{Gateways: []Gateway{fromNet(a)}}).Marshal() == (Desired{Gateways: []Gateway{fromNet(b)}}).Marshal()
}

func fromNet(g targetnet.Gateway) Gateway {
	return Gateway{Name: g.Name, Table: g.Table, Subnets: g.Subnets, VIPs: g.VIPs, NextHops: nextHopsOf(g.NextHops)}
}

func TestNextKeepsTablesAndCountsGenerations(t *testing.T) {
	v1, _, _ := Next("", []Gateway{gw("sllb-b", "20.0.0.2/32"), gw("sllb-a", "20.0.0.1/32")})
	d1, _ := ParseDesired(v1)
	if d1.Gateways[0].Name != "sllb-a" || d1.Gateways[0].Table != 50000 || d1.Gateways[1].Table != 50001 || d1.Generation != 1 {
		t.Fatalf("first: %s", v1)
	}
	// The same content in another order: nothing to write.
	if v, changed, _ := Next(v1, []Gateway{gw("sllb-a", "20.0.0.1/32"), gw("sllb-b", "20.0.0.2/32")}); changed || v != v1 {
		t.Errorf("same content rewritten: %s", v)
	}
	// sllb-a leaves, sllb-c arrives: sllb-b keeps 50001, sllb-c takes the
	// freed 50000; the generation counts on.
	v2, changed, _ := Next(v1, []Gateway{gw("sllb-c", "20.0.0.3/32"), gw("sllb-b", "20.0.0.2/32")})
	d2, _ := ParseDesired(v2)
	if !changed || d2.Generation != 2 || d2.Gateways[0].Name != "sllb-b" || d2.Gateways[0].Table != 50001 || d2.Gateways[1].Table != 50000 {
		t.Errorf("second: %s", v2)
	}
	// Nothing left: the annotation goes.
	if v, changed, _ := Next(v2, nil); !changed || v != "" {
		t.Errorf("no gateways: %q %v", v, changed)
	}
	if _, changed, _ := Next("", nil); changed {
		t.Errorf("no gateways and no annotation: a write")
	}
	// A broken current value is replaced.
	if v, changed, _ := Next("{", []Gateway{gw("sllb-a", "20.0.0.1/32")}); !changed || !strings.Contains(v, `"table":50000`) {
		t.Errorf("from a broken value: %s", v)
	}
}

func TestNextRunsOutOfTables(t *testing.T) {
	var many []Gateway
	for i := range targetnet.TableMax - targetnet.TableMin + 2 {
		many = append(many, Gateway{Name: string(rune('a'+i%26)) + strings.Repeat("x", i)})
	}
	if _, _, err := Next("", many); err == nil || !strings.Contains(err.Error(), "no routing table left") {
		t.Errorf("error %v", err)
	}
}

func TestParseDesiredRefuses(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"not JSON", "{", "not a target network configuration"},
		{"unknown field", `{"version":1,"gateways":[],"extra":1}`, "unknown field"},
		{"other version", `{"version":2,"gateways":[]}`, "version 2: this sllbrd reads version 1"},
		{"no version", `{"gateways":[]}`, "version 0"},
		{"trailing data", example + "{}", "data after"},
		{"family mix-up", strings.Replace(example, `"ipv6":["fd00:111::1"]`, `"ipv6":["169.111.100.3"]`, 1), "other family"},
		{"table outside", strings.Replace(example, "50000", "100", 1), "table 100 outside"},
		{"VIP not a host", strings.Replace(example, "20.0.0.1/32", "20.0.0.0/24", 1), "must be an IPv4 /32 or IPv6 /128"},
		{"loopback VIP", strings.Replace(example, "20.0.0.1/32", "127.0.0.1/32", 1), "127.0.0.1/32 is a loopback address"},
		{"unspecified VIP", strings.Replace(example, "2001:db8::1/128", "::/128", 1), "::/128 is an unspecified address"},
		{"multicast VIP", strings.Replace(example, "20.0.0.1/32", "239.1.1.1/32", 1), "239.1.1.1/32 is a multicast address"},
		{"link-local VIP", strings.Replace(example, "2001:db8::1/128", "fe80::1/128", 1), "fe80::1/128 is a link-local address"},
		{"bad address", strings.Replace(example, "169.111.100.1", "169.111.100.300", 1), "not a target network configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseDesired(tc.value); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseDesired = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestStatusOf(t *testing.T) {
	res := targetnet.Result{Gateways: []targetnet.GatewayResult{{Name: "sllb-a", Table: 50000,
		VIPs:       []netip.Prefix{netip.MustParsePrefix("20.0.0.1/32")},
		NextHops:   []netip.Addr{netip.MustParseAddr("169.111.100.1"), netip.MustParseAddr("fd00:111::1")},
		Interfaces: map[targetnet.Family]string{targetnet.IPv4: "net1"}, Kept: []targetnet.Family{targetnet.IPv6}}}}
	s := StatusOf(3, res, nil)
	want := `{"version":1,"observedGeneration":3,"ready":true,"gateways":[{"name":"sllb-a","table":50000,"vips":["20.0.0.1/32"],"nextHops":{"ipv4":["169.111.100.1"],"ipv6":["fd00:111::1"]},"interfaces":{"ipv4":"net1"},"keptNextHops":["ipv6"]}]}`
	if got := s.Marshal(); got != want {
		t.Errorf("status\n%s\nwant\n%s", got, want)
	}
	s = StatusOf(3, targetnet.Result{Conflicts: []string{"c"}}, errors.Join(errors.New("one"), errors.New("two")))
	if s.Ready || len(s.Errors) != 2 || s.Errors[1] != "two" {
		t.Errorf("status with errors %+v", s)
	}
	if back, err := ParseStatus(s.Marshal()); err != nil || back.Errors[0] != "one" || back.Conflicts[0] != "c" {
		t.Errorf("round trip %+v %v", back, err)
	}
}

// TestValidateIsTheSharedRule shows that what the target reads is held to
// model/vip, the rule of the CRD and of translation, beyond what the
// applier (targetnet) checks: a link-local or "this network" VIP passes
// targetnet but not ParseDesired, with the message vip.Check gives.
func TestValidateIsTheSharedRule(t *testing.T) {
	for _, v := range []string{"169.254.10.1/32", "0.1.2.3/32", "255.255.255.255/32"} {
		value := strings.Replace(example, "20.0.0.1/32", v, 1)
		var d Desired
		if err := json.Unmarshal([]byte(value), &d); err != nil {
			t.Fatal(err)
		}
		if err := d.Net().Validate(); err != nil {
			t.Fatalf("%s: targetnet refuses it itself (%v): pick another example", v, err)
		}
		want := vip.Check(netip.MustParsePrefix(v))
		_, err := ParseDesired(value)
		if err == nil || want == nil || !strings.Contains(err.Error(), want.Error()) || !errors.Is(err, targetnet.ErrInvalid) || !errors.Is(err, vip.ErrNotVIP) {
			t.Errorf("%s: ParseDesired = %v, want the error of vip.Check: %v", v, err, want)
		}
	}
}

func TestGatewayLivenessBounds(t *testing.T) {
	for _, tc := range []struct {
		l    GatewayLiveness
		want string // "" valid; else a part of the error
	}{
		{GatewayLiveness{IntervalMilliseconds: 200, Multiplier: 4}, ""},
		{GatewayLiveness{IntervalMilliseconds: 10, Multiplier: 1}, ""},
		{GatewayLiveness{IntervalMilliseconds: 10000, Multiplier: 6}, ""},
		{GatewayLiveness{IntervalMilliseconds: 9, Multiplier: 4}, "interval 9 ms outside 10..10000 ms"},
		{GatewayLiveness{IntervalMilliseconds: 10001, Multiplier: 4}, "interval 10001 ms"},
		{GatewayLiveness{IntervalMilliseconds: 200, Multiplier: 0}, "multiplier 0 outside 1..50"},
		{GatewayLiveness{IntervalMilliseconds: 200, Multiplier: 51}, "multiplier 51"},
		{GatewayLiveness{IntervalMilliseconds: 10000, Multiplier: 7}, "detection 1m10s"},
	} {
		g := gw("sllb-a", "20.0.0.1/32")
		g.Table = targetnet.TableMin
		g.Liveness = &tc.l
		value := Desired{Version: SchemaVersion, Generation: 1, Gateways: []Gateway{g}}.Marshal()
		d, err := ParseDesired(value)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v refused: %v", tc.l, err)
		case tc.want == "" && (d.Gateways[0].Liveness == nil || *d.Gateways[0].Liveness != tc.l):
			t.Errorf("%+v read back as %+v", tc.l, d.Gateways[0].Liveness)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, targetnet.ErrInvalid)):
			t.Errorf("%+v: error %v, want one containing %q wrapping ErrInvalid", tc.l, err, tc.want)
		}
	}
	// Absent, the field is not written: readers older than it see the
	// annotation they know.
	if v := (Desired{Version: SchemaVersion, Gateways: []Gateway{gw("sllb-a")}}).Marshal(); strings.Contains(v, "liveness") {
		t.Errorf("no liveness, yet written: %s", v)
	}
}
