package classify

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/model"
)

func TestCompileRejects(t *testing.T) {
	tooWideMask := model.ByteMatch{Protocol: tcp, Offset: 0, Size: 1, Mask: 0x1ff, Value: 1}
	tests := []struct {
		name  string
		route model.Route
		want  string // the whole error text
	}{
		{name: "destination not single", route: route("ns/r1", 1, vip+"/32", dsts(vip+"/32", "10.0.0.0/24")),
			want: `l34route "ns/r1": destinationCIDRs[1] "10.0.0.0/24": must be a single address (/32 or /128)`},
		{name: "v6 destination not single", route: route("ns/r1", 1, "2001:db8::/64"),
			want: `l34route "ns/r1": destinationCIDRs[0] "2001:db8::/64": must be a single address (/32 or /128)`},
		{name: "mapped destination not single", route: route("ns/r1", 1, "::ffff:20.0.0.0/120"),
			want: `l34route "ns/r1": destinationCIDRs[0] "::ffff:20.0.0.0/120": must be a single address (/32 or /128)`},
		{name: "no destination", route: route("ns/r1", 1, vip+"/32", dsts()),
			want: `l34route "ns/r1": destinationCIDRs: must not be empty`},
		{name: "invalid destination", route: route("ns/r1", 1, vip+"/32", func(r *model.Route) { r.Destinations = []netip.Prefix{{}} }),
			want: `l34route "ns/r1": destinationCIDRs[0] "invalid Prefix": is not a valid CIDR`},
		{name: "invalid source", route: route("ns/r1", 1, vip+"/32", func(r *model.Route) { r.Sources = []netip.Prefix{{}} }),
			want: `l34route "ns/r1": sourceCIDRs[0] "invalid Prefix": is not a valid CIDR`},
		{name: "source family missing", route: route("ns/r1", 1, vip+"/32", dsts(vip+"/32", vip6+"/128"), srcs("10.0.0.0/8")),
			want: `l34route "ns/r1": destinationCIDRs[1] "2001:db8::20/128": no sourceCIDR of the same family`},
		{name: "priority zero", route: route("ns/r1", 0, vip+"/32"),
			want: `l34route "ns/r1": priority "0": must be at least 1`},
		{name: "priority negative", route: route("ns/r1", -3, vip+"/32"),
			want: `l34route "ns/r1": priority "-3": must be at least 1`},
		{name: "no protocols", route: route("ns/r1", 1, vip+"/32", protos()),
			want: `l34route "ns/r1": protocols: must not be empty`},
		{name: "icmp protocol", route: route("ns/r1", 1, vip+"/32", protos(tcp, model.ProtoICMP)),
			want: `l34route "ns/r1": protocols[1] "icmp": must be TCP, UDP or SCTP`},
		{name: "destination port range reversed", route: route("ns/r1", 1, vip+"/32", dports(ports(80, 80), ports(90, 89))),
			want: `l34route "ns/r1": destinationPorts[1] "90-89": first port is above last port`},
		{name: "source port range reversed", route: route("ns/r1", 1, vip+"/32", sports(ports(2, 1))),
			want: `l34route "ns/r1": sourcePorts[0] "2-1": first port is above last port`},
		{name: "byte match size", route: route("ns/r1", 1, vip+"/32", bytematches(model.ByteMatch{Protocol: tcp, Size: 3, Mask: 1, Value: 1})),
			want: `l34route "ns/r1": byteMatches[0] "tcp[0:3] & 0x1 = 0x1": size must be 1, 2 or 4`},
		{name: "byte match zero mask", route: route("ns/r1", 1, vip+"/32", bytematches(model.ByteMatch{Protocol: tcp, Size: 2})),
			want: `l34route "ns/r1": byteMatches[0] "tcp[0:2] & 0x0 = 0x0": mask is zero: it would ignore every bit`},
		{name: "byte match mask too wide", route: route("ns/r1", 1, vip+"/32", bytematches(tooWideMask)),
			want: `l34route "ns/r1": byteMatches[0] "tcp[0:1] & 0x1ff = 0x1": mask is wider than the size`},
		{name: "byte match value outside mask", route: route("ns/r1", 1, vip+"/32", bytematches(model.ByteMatch{Protocol: tcp, Size: 1, Mask: 0xf0, Value: 0x01})),
			want: `l34route "ns/r1": byteMatches[0] "tcp[0:1] & 0xf0 = 0x1": value has bits outside the mask`},
		{name: "byte match protocol not in route", route: route("ns/r1", 1, vip+"/32", bytematches(model.ByteMatch{Protocol: udp, Size: 1, Mask: 0xff, Value: 1})),
			want: `l34route "ns/r1": byteMatches[0] "udp[0:1] & 0xff = 0x1": protocol udp is not one of the route's protocols`},
		{name: "no name", route: route("", 1, vip+"/32"),
			want: `l34route "": name: must not be empty`},
		{name: "no service", route: route("ns/r1", 1, vip+"/32", func(r *model.Route) { r.Service = "" }),
			want: `l34route "ns/r1": backendRefs: must name a Service`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			good := route("ns/good", 1, vip+"/32")
			table, errs := Compile([]model.Route{tt.route, good})
			if len(errs) != 1 || errs[0].Error() != tt.want {
				t.Fatalf("errors = %q, want [%q]", errs, tt.want)
			}
			var re *RouteError
			if !errors.As(errs[0], &re) || re.Route != tt.route.Name {
				t.Fatalf("error %v is not a *RouteError for %q", errs[0], tt.route.Name)
			}
			if table.Len() != 1 || lookupName(table, flow(tcp, "10.0.0.1", 1, vip, 80)) != "ns/good" {
				t.Fatalf("the good route does not work alone: Len %d", table.Len())
			}
		})
	}
}

func TestCompileReportsEveryProblem(t *testing.T) {
	bad := route("ns/r1", 0, "10.0.0.0/24", protos())
	_, errs := Compile([]model.Route{bad})
	want := []string{"priority", "destinationCIDRs[0]", "protocols"}
	if len(errs) != len(want) {
		t.Fatalf("errors = %q, want one each for %q", errs, want)
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), ": "+w) {
			t.Errorf("error %d = %q, want about %s", i, errs[i], w)
		}
	}
}

func TestCompileRejectsDuplicateName(t *testing.T) {
	table, errs := Compile([]model.Route{
		route("ns/r", 1, vip+"/32"),
		route("ns/r", 9, "20.0.0.2/32"),
	})
	if len(errs) != 1 || errs[0].Error() != `l34route "ns/r": name: is used by another route` {
		t.Fatalf("errors = %q", errs)
	}
	if table.Len() != 1 || lookupName(table, flow(tcp, "1.1.1.1", 1, vip, 80)) != "ns/r" {
		t.Fatal("the first route with the name should stay")
	}
}
