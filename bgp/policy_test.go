package bgp

import (
	"testing"

	api "github.com/osrg/gobgp/v3/api"
)

// TestPolicies checks the policy text; TestIntegrationBIRDGateway checks
// its effect (BIRD's extra prefixes are received but not accepted).
func TestPolicies(t *testing.T) {
	sets := map[string]*api.Prefix{}
	for _, d := range definedSets() {
		if len(d.Prefixes) != 1 {
			t.Fatalf("set %s has %d prefixes", d.Name, len(d.Prefixes))
		}
		sets[d.Name] = d.Prefixes[0]
	}
	for name, want := range map[string][3]any{
		setDefaultV4: {"0.0.0.0/0", uint32(0), uint32(0)},
		setDefaultV6: {"::/0", uint32(0), uint32(0)},
		setHostV4:    {"0.0.0.0/0", uint32(32), uint32(32)},
		setHostV6:    {"::/0", uint32(128), uint32(128)},
	} {
		p := sets[name]
		if p == nil || p.IpPrefix != want[0] || p.MaskLengthMin != want[1] || p.MaskLengthMax != want[2] {
			t.Errorf("set %s = %+v, want %v", name, p, want)
		}
	}
	type rule struct {
		set   string
		local bool
	}
	rules := map[string][]rule{}
	for _, p := range policies() {
		for _, s := range p.Statements {
			if s.Actions.RouteAction != api.RouteAction_ACCEPT {
				t.Errorf("%s/%s does not accept", p.Name, s.Name)
			}
			rules[p.Name] = append(rules[p.Name], rule{s.Conditions.PrefixSet.Name, s.Conditions.RouteType == api.Conditions_ROUTE_TYPE_LOCAL})
		}
	}
	wantImport := []rule{{setHostV4, true}, {setHostV6, true}, {setDefaultV4, false}, {setDefaultV6, false}}
	wantExport := []rule{{setHostV4, true}, {setHostV6, true}}
	if !equalRules(rules[policyImport], wantImport) || !equalRules(rules[policyExport], wantExport) {
		t.Errorf("rules %+v", rules)
	}
	for _, a := range assignments() {
		if a.DefaultAction != api.RouteAction_REJECT || a.Name != "global" {
			t.Errorf("assignment %+v must reject by default", a)
		}
	}
}

func equalRules[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
