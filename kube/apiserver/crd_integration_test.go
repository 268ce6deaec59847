package apiserver_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestIntegrationCRDValidation shows that the CRDs of deploy/crds accept the
// seed's examples as written and reject invalid objects with messages that
// say what is wrong.
func TestIntegrationCRDValidation(t *testing.T) {
	e := newEnv(t, "sllbrd-test-crd")
	e.createExamples()

	set := func(value any, path ...string) func(*unstructured.Unstructured) {
		return func(o *unstructured.Unstructured) {
			if err := unstructured.SetNestedField(o.Object, value, path...); err != nil {
				t.Fatalf("set %v: %v", path, err)
			}
		}
	}
	route := func() *unstructured.Unstructured {
		return exampleObject(t, "l34route.yaml", "vip-20-0-0-1-multi-ports-a")
	}
	router := func() *unstructured.Unstructured {
		return exampleObject(t, "gatewayrouter.yaml", "gateway-a-v4")
	}
	tests := []struct {
		name   string
		object func() *unstructured.Unstructured
		mutate func(*unstructured.Unstructured)
		want   []string // substrings of the API server's message
	}{
		{"bad CIDR", route, set([]any{"20.0.0.300/32"}, "spec", "destinationCIDRs"),
			[]string{"spec.destinationCIDRs[0]", "must be a CIDR such as 10.0.0.0/8"}},
		{"bad source CIDR", route, set([]any{"10.0.0.0/33"}, "spec", "sourceCIDRs"),
			[]string{"spec.sourceCIDRs[0]", "must be a CIDR"}},
		{"/24 destination", route, set([]any{"20.0.0.0/24"}, "spec", "destinationCIDRs"),
			[]string{"spec.destinationCIDRs", "destination CIDRs must be IPv4 /32 or IPv6 /128"}},
		{"/64 IPv6 destination", route, set([]any{"2000::/64"}, "spec", "destinationCIDRs"),
			[]string{"destination CIDRs must be IPv4 /32 or IPv6 /128"}},
		{"two parentRefs", route, set([]any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "spec", "parentRefs"),
			[]string{"spec.parentRefs", "must have at most 1 item"}},
		{"parent not a Gateway", route, set([]any{map[string]any{"name": "a", "kind": "Service", "group": ""}}, "spec", "parentRefs"),
			[]string{"the parent must be a gateway.networking.k8s.io Gateway"}},
		{"backend not a Service", route, set([]any{map[string]any{"name": "a", "port": int64(1), "kind": "Pod"}}, "spec", "backendRefs"),
			[]string{"the backend must be a core Service"}},
		{"reversed port range", route, set([]any{"4010-4000"}, "spec", "destinationPorts"),
			[]string{"spec.destinationPorts[0]", "a range must not end before it starts"}},
		{"port above 65535", route, set([]any{"1-70000"}, "spec", "sourcePorts"),
			[]string{"spec.sourcePorts[0]", "ports must be in 0..65535"}},
		{"port not a number", route, set([]any{"http"}, "spec", "destinationPorts"),
			[]string{"spec.destinationPorts[0]", "should match"}},
		{"bad protocol", route, set([]any{"ICMP"}, "spec", "protocols"),
			[]string{"spec.protocols[0]", `Unsupported value: "ICMP"`, `"TCP", "UDP", "SCTP"`}},
		{"duplicate protocol", route, set([]any{"TCP", "TCP"}, "spec", "protocols"),
			[]string{"spec.protocols[1]", "Duplicate value"}},
		{"bad byteMatch size", route, set([]any{"tcp[13:3] = 1"}, "spec", "byteMatches"),
			[]string{"spec.byteMatches[0]", "should match"}},
		{"bad byteMatch protocol", route, set([]any{"icmp[0] = 8"}, "spec", "byteMatches"),
			[]string{"spec.byteMatches[0]", "should match"}},
		{"priority 0", route, set(int64(0), "spec", "priority"),
			[]string{"spec.priority", "should be greater than or equal to 1"}},
		{"no destination", route, set([]any{}, "spec", "destinationCIDRs"),
			[]string{"spec.destinationCIDRs", "should have at least 1 items"}},
		{"bad router address", router, set("169.254.100.300", "spec", "address"),
			[]string{"spec.address", "must be an IPv4 or IPv6 address"}},
		{"interface name too long", router, set("an-interface-name", "spec", "interface"),
			[]string{"spec.interface", "may not be more than 15 bytes"}},
		{"ASN 0", router, set(int64(0), "spec", "bgp", "localASN"),
			[]string{"spec.bgp.localASN", "should be greater than or equal to 1"}},
		{"ASN above 32 bits", router, set(int64(4294967296), "spec", "bgp", "remoteASN"),
			[]string{"spec.bgp.remoteASN", "should be less than or equal to 4294967295"}},
		{"holdTime 1s", router, set("1s", "spec", "bgp", "holdTime"),
			[]string{"spec.bgp.holdTime", "must be a duration between 3s and 65535s"}},
		{"holdTime not a duration", router, set("soon", "spec", "bgp", "holdTime"),
			[]string{"spec.bgp.holdTime"}},
		{"BFD minTx 5ms", router, set("5ms", "spec", "bgp", "bfd", "minTx"),
			[]string{"spec.bgp.bfd.minTx", "must be a duration between 10ms and 60s"}},
		{"BFD minRx 2m", router, set("2m", "spec", "bgp", "bfd", "minRx"),
			[]string{"spec.bgp.bfd.minRx", "must be a duration between 10ms and 60s"}},
		{"BFD multiplier 0", router, set(int64(0), "spec", "bgp", "bfd", "multiplier"),
			[]string{"spec.bgp.bfd.multiplier", "should be greater than or equal to 1"}},
		{"BFD multiplier 256", router, set(int64(256), "spec", "bgp", "bfd", "multiplier"),
			[]string{"spec.bgp.bfd.multiplier", "should be less than or equal to 255"}},
		{"bgp and static", router, set(map[string]any{}, "spec", "static"),
			[]string{"exactly one of bgp and static must be set"}},
		{"multihop BFD on a static router", router, func(o *unstructured.Unstructured) {
			unstructured.RemoveNestedField(o.Object, "spec", "bgp")
			set(map[string]any{"bfd": map[string]any{"switch": true, "multihop": true}}, "spec", "static")(o)
		}, []string{"multihop BFD needs bgp"}},
		{"multihop BFD to a link-local peer", router, func(o *unstructured.Unstructured) {
			set("fe80::150", "spec", "address")(o)
			set(true, "spec", "bgp", "bfd", "multihop")(o)
		}, []string{"multihop BFD needs addresses that are not IPv6 link-local"}},
		{"BFD local address not an address", router, set("lb-1", "spec", "bgp", "bfd", "localAddress"),
			[]string{"spec.bgp.bfd.localAddress", "must be an IPv4 or IPv6 address"}},
		{"BFD local address of the other family", router, set("fd00:169::1", "spec", "bgp", "bfd", "localAddress"),
			[]string{"bfd.localAddress must be of the address family of address"}},
		{"password Secret without a name", router, set(map[string]any{"key": "password"}, "spec", "bgp", "passwordSecretRef"),
			[]string{"spec.bgp.passwordSecretRef.name", "Required value"}},
		{"password Secret key with a slash", router, set(map[string]any{"name": "a", "key": "a/b"}, "spec", "bgp", "passwordSecretRef"),
			[]string{"spec.bgp.passwordSecretRef.key", "should match"}},
		{"password to a link-local peer", router, func(o *unstructured.Unstructured) {
			set("fe80::150", "spec", "address")(o)
			set(map[string]any{"name": "bgp-auth"}, "spec", "bgp", "passwordSecretRef")(o)
		}, []string{"bgp.passwordSecretRef needs an address that is not IPv6 link-local"}},
		{"TTL security on iBGP", router, func(o *unstructured.Unstructured) {
			set(int64(4248829953), "spec", "bgp", "localASN")(o)
			set(map[string]any{}, "spec", "bgp", "ttlSecurity")(o)
		}, []string{"ttlSecurity is for eBGP sessions only"}},
		{"TTL security 255 hops", router, set(map[string]any{"hops": int64(255)}, "spec", "bgp", "ttlSecurity"),
			[]string{"spec.bgp.ttlSecurity.hops", "should be less than or equal to 254"}},
		{"community above 65535", router, set([]any{"65536:1"}, "spec", "bgp", "communities"),
			[]string{"spec.bgp.communities[0]", "must be AS:value with numbers in 0..65535"}},
		{"community by name", router, set([]any{"no-export"}, "spec", "bgp", "communities"),
			[]string{"spec.bgp.communities[0]", "should match"}},
		{"duplicate community", router, set([]any{"1:1", "1:1"}, "spec", "bgp", "communities"),
			[]string{"spec.bgp.communities[1]", "Duplicate value"}},
		{"33 communities", router, set(manyCommunities(33), "spec", "bgp", "communities"),
			[]string{"spec.bgp.communities", "must have at most 32 items"}},
		{"large community above 32 bits", router, set([]any{"4294967296:0:0"}, "spec", "bgp", "largeCommunities"),
			[]string{"spec.bgp.largeCommunities[0]", "must be global:local1:local2 with numbers in 0..4294967295"}},
		{"large community of two numbers", router, set([]any{"1:2"}, "spec", "bgp", "largeCommunities"),
			[]string{"spec.bgp.largeCommunities[0]", "should match"}},
		{"local preference on eBGP", router, set(int64(200), "spec", "bgp", "localPreference"),
			[]string{"localPreference is sent over iBGP sessions only"}},
		{"local preference 0", router, func(o *unstructured.Unstructured) {
			set(int64(4248829953), "spec", "bgp", "localASN")(o)
			set(int64(0), "spec", "bgp", "localPreference")(o)
		}, []string{"spec.bgp.localPreference", "should be greater than or equal to 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.object()
			obj.SetName("invalid")
			tc.mutate(obj)
			_, err := e.client.Create(e.ctx, e.ns, obj)
			if err == nil {
				t.Fatalf("created an invalid %s", obj.GetKind())
			}
			t.Logf("rejected: %v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}

	// The defaults of the CRD are applied by the API server.
	r := router()
	r.SetName("defaults")
	unstructured.RemoveNestedField(r.Object, "spec", "bgp", "holdTime")
	unstructured.RemoveNestedField(r.Object, "spec", "bgp", "bfd", "multiplier")
	got, err := e.client.Create(e.ctx, e.ns, r)
	if err != nil {
		t.Fatalf("create without optional fields: %v", err)
	}
	hold, _, _ := unstructured.NestedString(got.Object, "spec", "bgp", "holdTime")
	mult, _, _ := unstructured.NestedInt64(got.Object, "spec", "bgp", "bfd", "multiplier")
	if hold != "90s" || mult != 3 {
		t.Errorf("defaults: holdTime %q multiplier %d, want 90s and 3", hold, mult)
	}

	// Multihop BFD with a local address is accepted.
	mh := router()
	mh.SetName("multihop")
	set(true, "spec", "bgp", "bfd", "multihop")(mh)
	set("169.254.100.1", "spec", "bgp", "bfd", "localAddress")(mh)
	if _, err := e.client.Create(e.ctx, e.ns, mh); err != nil {
		t.Errorf("create a router with multihop BFD: %v", err)
	}

	// Session protection and VIP attributes are accepted, with the
	// defaults of the password key and of the TTL security hops.
	prot := router()
	prot.SetName("protected")
	set(map[string]any{"name": "bgp-auth"}, "spec", "bgp", "passwordSecretRef")(prot)
	set(map[string]any{}, "spec", "bgp", "ttlSecurity")(prot)
	set(manyCommunities(32), "spec", "bgp", "communities")(prot)
	set([]any{"4294967295:0:4294967295"}, "spec", "bgp", "largeCommunities")(prot)
	got, err = e.client.Create(e.ctx, e.ns, prot)
	if err != nil {
		t.Fatalf("create a router with a password, TTL security and communities: %v", err)
	}
	key, _, _ := unstructured.NestedString(got.Object, "spec", "bgp", "passwordSecretRef", "key")
	hops, _, _ := unstructured.NestedInt64(got.Object, "spec", "bgp", "ttlSecurity", "hops")
	if key != "password" || hops != 1 {
		t.Errorf("defaults: passwordSecretRef.key %q ttlSecurity.hops %d, want password and 1", key, hops)
	}
	ibgp := router()
	ibgp.SetName("ibgp-preferred")
	set(int64(4248829953), "spec", "bgp", "localASN")(ibgp)
	set(int64(4294967295), "spec", "bgp", "localPreference")(ibgp)
	if _, err := e.client.Create(e.ctx, e.ns, ibgp); err != nil {
		t.Errorf("create an iBGP router with a local preference: %v", err)
	}
}

// manyCommunities returns n distinct communities.
func manyCommunities(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("65000:%d", i)
	}
	return out
}
