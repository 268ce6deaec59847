package bgp

import (
	"context"
	"fmt"

	api "github.com/osrg/gobgp/v3/api"
)

// Names of the GoBGP defined sets and policies this package installs.
const (
	setDefaultV4 = "sllbrd-default-v4"
	setDefaultV6 = "sllbrd-default-v6"
	setHostV4    = "sllbrd-host-v4"
	setHostV6    = "sllbrd-host-v6"
	policyImport = "sllbrd-import"
	policyExport = "sllbrd-export"
)

// definedSets: the two default routes (exact length 0) and all host routes
// (/32, /128), one set per family (GoBGP prefix sets are single-family).
func definedSets() []*api.DefinedSet {
	set := func(name, prefix string, length uint32) *api.DefinedSet {
		return &api.DefinedSet{
			DefinedType: api.DefinedType_PREFIX,
			Name:        name,
			Prefixes:    []*api.Prefix{{IpPrefix: prefix, MaskLengthMin: length, MaskLengthMax: length}},
		}
	}
	return []*api.DefinedSet{
		set(setDefaultV4, "0.0.0.0/0", 0),
		set(setDefaultV6, "::/0", 0),
		set(setHostV4, "0.0.0.0/0", 32),
		set(setHostV6, "::/0", 128),
	}
}

// policies: import accepts default routes from peers and our own host
// routes (GoBGP runs the global import policy on locally added paths too);
// export accepts only our own host routes. Both assignments reject the rest.
func policies() []*api.Policy {
	return []*api.Policy{
		{Name: policyImport, Statements: []*api.Statement{
			acceptStatement(policyImport+"-local-v4", setHostV4, true),
			acceptStatement(policyImport+"-local-v6", setHostV6, true),
			acceptStatement(policyImport+"-default-v4", setDefaultV4, false),
			acceptStatement(policyImport+"-default-v6", setDefaultV6, false),
		}},
		{Name: policyExport, Statements: []*api.Statement{
			acceptStatement(policyExport+"-vip-v4", setHostV4, true),
			acceptStatement(policyExport+"-vip-v6", setHostV6, true),
		}},
	}
}

func acceptStatement(name, prefixSet string, localOnly bool) *api.Statement {
	c := &api.Conditions{PrefixSet: &api.MatchSet{Type: api.MatchSet_ANY, Name: prefixSet}}
	if localOnly {
		c.RouteType = api.Conditions_ROUTE_TYPE_LOCAL
	}
	return &api.Statement{
		Name:       name,
		Conditions: c,
		Actions:    &api.Actions{RouteAction: api.RouteAction_ACCEPT},
	}
}

func assignments() []*api.PolicyAssignment {
	return []*api.PolicyAssignment{
		{Name: "global", Direction: api.PolicyDirection_IMPORT,
			Policies: []*api.Policy{{Name: policyImport}}, DefaultAction: api.RouteAction_REJECT},
		{Name: "global", Direction: api.PolicyDirection_EXPORT,
			Policies: []*api.Policy{{Name: policyExport}}, DefaultAction: api.RouteAction_REJECT},
	}
}

// installPolicies puts the sets, policies and global assignments into srv.
func installPolicies(ctx context.Context, srv bgpServer) error {
	for _, d := range definedSets() {
		if err := srv.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: d}); err != nil {
			return fmt.Errorf("add defined set %s: %w", d.Name, err)
		}
	}
	for _, p := range policies() {
		if err := srv.AddPolicy(ctx, &api.AddPolicyRequest{Policy: p}); err != nil {
			return fmt.Errorf("add policy %s: %w", p.Name, err)
		}
	}
	for _, a := range assignments() {
		if err := srv.SetPolicyAssignment(ctx, &api.SetPolicyAssignmentRequest{Assignment: a}); err != nil {
			return fmt.Errorf("assign policy %s %s: %w", a.Name, a.Direction, err)
		}
	}
	return nil
}
