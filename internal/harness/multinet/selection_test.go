package multinet

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParseNetworks(t *testing.T) {
	for _, tc := range []struct {
		annotation string
		want       []Selection
	}{
		{"", nil},
		{"  ", nil},
		{"net-a", []Selection{{"pods", "net-a", ""}}},
		{"net-a,other-ns/net-b,net-c@eth5", []Selection{{"pods", "net-a", ""}, {"other-ns", "net-b", ""}, {"pods", "net-c", "eth5"}}},
		{" net-a , other-ns / net-b @ vlan-100 ", []Selection{{"pods", "net-a", ""}, {"other-ns", "net-b", "vlan-100"}}},
		{"nad.with.dots", []Selection{{"pods", "nad.with.dots", ""}}},
		{`[{"name":"vlan-100","interface":"vlan-100"},{"name":"macvlan-nad-1","interface":"net1"}]`,
			[]Selection{{"pods", "vlan-100", "vlan-100"}, {"pods", "macvlan-nad-1", "net1"}}},
		{`[{"name":"a","namespace":"infra"},{"name":"b","namespace":null}]`, []Selection{{"infra", "a", ""}, {"pods", "b", ""}}},
		{`[]`, []Selection{}},
	} {
		got, err := ParseNetworks(tc.annotation, "pods")
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseNetworks(%q) = %#v, %v; want %#v", tc.annotation, got, err, tc.want)
		}
	}
}

func TestParseNetworksRejects(t *testing.T) {
	for _, tc := range []struct{ annotation, want string }{
		{"net-a,,net-b", "network 2 is empty"},
		{"net-a,", "network 2 is empty"},
		{"/net-a", "empty namespace"},
		{"net-a@", "empty interface"},
		{"ns/", "has no name"},
		{"a/b/c", "want [namespace/]name[@interface]"},
		{"a@b@c", "want [namespace/]name[@interface]"},
		{"Net-A", "network name \"Net-A\""},
		{"net_a", "network name \"net_a\""},
		{"Infra/net-a", "namespace \"Infra\""},
		{"net-a@averyveryverylongname", "longer than 15"},
		{`{"name":"a"}`, "not a JSON list"},
		{`[{"name":"a"}`, "not a JSON list"},
		{`["a"]`, "not a JSON list"},
		{`[null]`, "network 1 is null"},
		{`[{"namespace":"x"}]`, "has no \"name\""},
		{`[{"name":1}]`, `"name" must be a string`},
		{`[{"name":"a","ips":["10.0.0.1/24"],"mac":"02:00:00:00:00:01"}]`, "ips, mac not supported by multinet"},
		{`[{"name":"a","interfaceRequest":"eth1"}]`, "interfaceRequest not supported"},
		{`[{"name":"a","cni-args":{"x":1}}]`, "cni-args not supported"},
		{`[{"name":"a","colour":"red"}]`, "unknown keys colour"},
		{`[{"name":"a","interface":"eth 1"}]`, "whitespace"},
		{`[{"name":"a","interface":"x/y"}]`, "'/'"},
		{`[{"name":"a","namespace":"a.b"}]`, `namespace "a.b"`},
		{strings.Repeat("n,", maxNetworks) + "n", fmt.Sprintf("more than %d", maxNetworks)},
	} {
		_, err := ParseNetworks(tc.annotation, "pods")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseNetworks(%q): error %v, want one saying %q", tc.annotation, err, tc.want)
		}
	}
}

func TestCheckIfName(t *testing.T) {
	for _, ok := range []string{"eth0", "net1", "vlan-100", "a", "exactly15bytes_", "ext@0"} {
		if err := checkIfName(ok); err != nil {
			t.Errorf("checkIfName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "sixteen-bytes-xx", "eth0:1", "a/b", "a b", "a\tb", "a\x00", "a\x7f"} {
		if err := checkIfName(bad); err == nil {
			t.Errorf("checkIfName(%q) accepted it", bad)
		}
	}
}
