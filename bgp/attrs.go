package bgp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/sllbrd/sllbrd/model"
)

// exportAttrs are the path attributes added to every VIP announced to one
// peer. It is comparable: communities are kept in GoBGP's text form,
// space-separated, in the router's order.
type exportAttrs struct {
	communities      string // "AS:value ..."
	largeCommunities string // "global:local1:local2 ..."
	localPref        uint32 // 0: not set (GoBGP cannot set 0)
}

func newExportAttrs(b *model.BGP) exportAttrs {
	var a exportAttrs
	a.communities = joinStrings(b.Communities)
	a.largeCommunities = joinStrings(b.LargeCommunities)
	if b.LocalPreference != nil {
		a.localPref = *b.LocalPreference
	}
	return a
}

func joinStrings[T fmt.Stringer](l []T) string {
	parts := make([]string, len(l))
	for i, v := range l {
		parts[i] = v.String()
	}
	return strings.Join(parts, " ")
}

func (a exportAttrs) empty() bool { return a == exportAttrs{} }

// Names of the per-peer defined set and policy of the export attributes.
func attrsSetName(a netip.Addr) string    { return "sllbrd-peer-" + a.String() }
func attrsPolicyName(a netip.Addr) string { return "sllbrd-attrs-" + a.String() }

// attrsPolicy builds the neighbour set matching the peer at addr and the
// export policy that adds a's attributes to our own paths sent to it. The
// statement has no route action, so evaluation goes on to sllbrd-export,
// which accepts the VIPs (GoBGP runs a policy's statements, then the
// assignment's policies, in order until one accepts or rejects).
func attrsPolicy(addr netip.Addr, a exportAttrs) (*api.DefinedSet, *api.Policy) {
	host := addr.WithZone("")
	set := &api.DefinedSet{
		DefinedType: api.DefinedType_NEIGHBOR,
		Name:        attrsSetName(addr),
		List:        []string{netip.PrefixFrom(host, host.BitLen()).String()},
	}
	actions := &api.Actions{RouteAction: api.RouteAction_NONE}
	if a.communities != "" {
		actions.Community = &api.CommunityAction{Type: api.CommunityAction_ADD, Communities: strings.Fields(a.communities)}
	}
	if a.largeCommunities != "" {
		actions.LargeCommunity = &api.CommunityAction{Type: api.CommunityAction_ADD, Communities: strings.Fields(a.largeCommunities)}
	}
	if a.localPref != 0 {
		// Set after GoBGP's default of 100 for iBGP; stripped for eBGP
		// peers after the export policy (RFC 4271 section 5.1.5).
		actions.LocalPref = &api.LocalPrefAction{Value: a.localPref}
	}
	name := attrsPolicyName(addr)
	return set, &api.Policy{Name: name, Statements: []*api.Statement{{
		Name: name,
		Conditions: &api.Conditions{
			NeighborSet: &api.MatchSet{Type: api.MatchSet_ANY, Name: set.Name},
			RouteType:   api.Conditions_ROUTE_TYPE_LOCAL,
		},
		Actions: actions,
	}}}
}

// exportAssignment is the global export assignment: the attribute policies
// of the given peers, then sllbrd-export; anything not accepted is rejected.
func exportAssignment(peers []netip.Addr) *api.PolicyAssignment {
	slices.SortFunc(peers, netip.Addr.Compare)
	var ps []*api.Policy
	for _, a := range peers {
		ps = append(ps, &api.Policy{Name: attrsPolicyName(a)})
	}
	ps = append(ps, &api.Policy{Name: policyExport})
	return &api.PolicyAssignment{Name: "global", Direction: api.PolicyDirection_EXPORT,
		Policies: ps, DefaultAction: api.RouteAction_REJECT}
}

// syncAttrs makes the installed attribute policies those of want. A
// changed peer's policy is first taken out of the export assignment, then
// replaced, then put back; other peers' policies are not touched. Objects
// left by an earlier failure are deleted before they are added again, so
// a retry converges. s.mu is held.
func (s *Speaker) syncAttrs(ctx context.Context, want map[netip.Addr]peerSpec) error {
	desired := map[netip.Addr]exportAttrs{}
	for a, spec := range want {
		if !spec.attrs.empty() {
			desired[a] = spec.attrs
		}
	}
	var changed []netip.Addr
	for a := range s.attrs {
		if desired[a] != s.attrs[a] {
			changed = append(changed, a)
		}
	}
	for a := range desired {
		if _, ok := s.attrs[a]; !ok {
			changed = append(changed, a)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	slices.SortFunc(changed, netip.Addr.Compare)
	for _, a := range changed {
		delete(s.attrs, a)
	}
	if err := s.setExportAssignment(ctx); err != nil {
		return err
	}
	var errs []error
	for _, a := range changed {
		// Not found is the usual answer: nothing to report.
		_ = s.srv.DeletePolicy(ctx, &api.DeletePolicyRequest{Policy: &api.Policy{Name: attrsPolicyName(a)}, All: true})
		_ = s.srv.DeleteDefinedSet(ctx, &api.DeleteDefinedSetRequest{
			DefinedSet: &api.DefinedSet{DefinedType: api.DefinedType_NEIGHBOR, Name: attrsSetName(a)}, All: true})
		w, ok := desired[a]
		if !ok {
			continue
		}
		set, policy := attrsPolicy(a, w)
		if err := s.srv.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: set}); err != nil {
			errs = append(errs, fmt.Errorf("peer %s: add neighbour set: %w", a, err))
			continue
		}
		if err := s.srv.AddPolicy(ctx, &api.AddPolicyRequest{Policy: policy}); err != nil {
			errs = append(errs, fmt.Errorf("peer %s: add attribute policy: %w", a, err))
			continue
		}
		s.attrs[a] = w
	}
	return errors.Join(append(errs, s.setExportAssignment(ctx))...)
}

// setExportAssignment assigns the installed attribute policies. s.mu is held.
func (s *Speaker) setExportAssignment(ctx context.Context) error {
	a := exportAssignment(slices.Collect(maps.Keys(s.attrs)))
	if err := s.srv.SetPolicyAssignment(ctx, &api.SetPolicyAssignmentRequest{Assignment: a}); err != nil {
		return fmt.Errorf("assign export policies: %w", err)
	}
	return nil
}

// resendAttrs re-advertises our paths to the peers whose attributes
// changed while their session stayed up (a soft reset out, RFC 2918's
// outbound half: no session reset). A peer that is not established is
// skipped by GoBGP: it gets the attributes when it comes up. Failed resets
// stay pending for the next Apply. s.mu is held.
func (s *Speaker) resendAttrs(ctx context.Context) error {
	var errs []error
	for _, a := range slices.SortedFunc(maps.Keys(s.resend), netip.Addr.Compare) {
		spec, ok := s.peers[a]
		if !ok {
			delete(s.resend, a)
			continue
		}
		err := s.srv.ResetPeer(ctx, &api.ResetPeerRequest{Address: spec.key(), Soft: true, Direction: api.ResetPeerRequest_OUT})
		if err != nil {
			errs = append(errs, fmt.Errorf("re-advertise to peer %s (%s): %w", a, spec.name, err))
			continue
		}
		delete(s.resend, a)
		s.cfg.logger.Info("bgp VIP attributes changed, re-advertised", "peer", a, "router", spec.name)
	}
	return errors.Join(errs...)
}
