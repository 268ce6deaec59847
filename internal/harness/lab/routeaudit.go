package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// auditTable is the nftables table of the route audit (never sllbrd's own
// table "sllbrd", which sllbrd replaces when it programs its rules).
const auditTable = "sllbrd_audit"

// MarkedRouting counts, for one address family of one LB, what routing did
// with the packets that carry a fwmark (in the lab only sllbrd's verdicts
// set one).
type MarkedRouting struct {
	// Marked: marked packets entering routing (prerouting at priority
	// filter, after sllbrd's queue at raw).
	Marked uint64
	// ToTargets: marked packets forwarded out of the target network with a
	// lab target's address as next hop.
	ToTargets uint64
	// Elsewhere: marked packets forwarded any other way, e.g. routed by the
	// main table towards the gateway.
	Elsewhere uint64
}

// Dropped is what routing dropped of the marked packets (a blackhole route
// or rule): marked but forwarded nowhere. Read after traffic has stopped.
func (m MarkedRouting) Dropped() uint64 {
	if f := m.ToTargets + m.Elsewhere; f < m.Marked {
		return m.Marked - f
	}
	return 0
}

func (m MarkedRouting) String() string {
	return fmt.Sprintf("marked %d: to targets %d, elsewhere %d, dropped %d", m.Marked, m.ToTargets, m.Elsewhere, m.Dropped())
}

// RouteAudit is MarkedRouting for both families.
type RouteAudit struct{ V4, V6 MarkedRouting }

// InstallRouteAudit adds the nftables counters of ReadRouteAudit to node
// (an LB): exact per-packet counts in the kernel, at prerouting and forward.
func (l *Lab) InstallRouteAudit(ctx context.Context, node string) error {
	var v4, v6 []string
	for i := 1; i <= l.opts.Targets; i++ {
		v4 = append(v4, TargetAddrs(i).V4.Addr().String())
		v6 = append(v6, TargetAddrs(i).V6.Addr().String())
	}
	t := auditTable
	rules := []string{
		"add table inet " + t,
		"add chain inet " + t + " pre { type filter hook prerouting priority filter; policy accept; }",
		"add chain inet " + t + " fw { type filter hook forward priority filter; policy accept; }",
	}
	for _, c := range []string{"marked4", "marked6", "targets4", "targets6", "elsewhere4", "elsewhere6"} {
		rules = append(rules, fmt.Sprintf("add counter inet %s %s", t, c))
	}
	rules = append(rules,
		fmt.Sprintf("add rule inet %s pre meta mark != 0 meta nfproto ipv4 counter name marked4", t),
		fmt.Sprintf("add rule inet %s pre meta mark != 0 meta nfproto ipv6 counter name marked6", t),
		fmt.Sprintf("add rule inet %s fw meta mark != 0 oifname %q rt ip nexthop { %s } counter name targets4 accept", t, TargetLink, strings.Join(v4, ", ")),
		fmt.Sprintf("add rule inet %s fw meta mark != 0 oifname %q rt ip6 nexthop { %s } counter name targets6 accept", t, TargetLink, strings.Join(v6, ", ")),
		fmt.Sprintf("add rule inet %s fw meta mark != 0 meta nfproto ipv4 counter name elsewhere4", t),
		fmt.Sprintf("add rule inet %s fw meta mark != 0 meta nfproto ipv6 counter name elsewhere6", t),
	)
	if _, err := l.Exec(ctx, node, "nft", strings.Join(rules, "; ")); err != nil {
		return fmt.Errorf("%s: route audit: %w", node, err)
	}
	return nil
}

// ReadRouteAudit reads the counters InstallRouteAudit added to node.
func (l *Lab) ReadRouteAudit(ctx context.Context, node string) (RouteAudit, error) {
	js, err := l.Exec(ctx, node, "nft", "-j", "list", "counters", "table", "inet", auditTable)
	if err != nil {
		return RouteAudit{}, fmt.Errorf("%s: route audit: %w", node, err)
	}
	c, err := parseNftCounters(js)
	if err != nil {
		return RouteAudit{}, fmt.Errorf("%s: route audit: %w", node, err)
	}
	want := []string{"marked4", "marked6", "targets4", "targets6", "elsewhere4", "elsewhere6"}
	for _, n := range want {
		if _, ok := c[n]; !ok {
			return RouteAudit{}, fmt.Errorf("%s: route audit: counter %s missing", node, n)
		}
	}
	return RouteAudit{
		V4: MarkedRouting{Marked: c["marked4"], ToTargets: c["targets4"], Elsewhere: c["elsewhere4"]},
		V6: MarkedRouting{Marked: c["marked6"], ToTargets: c["targets6"], Elsewhere: c["elsewhere6"]},
	}, nil
}

// parseNftCounters returns packets by counter name from `nft -j list counters`.
func parseNftCounters(js string) (map[string]uint64, error) {
	var doc struct {
		Nftables []struct {
			Counter *struct {
				Name    string `json:"name"`
				Packets uint64 `json:"packets"`
			} `json:"counter"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		return nil, fmt.Errorf("nft json: %w", err)
	}
	out := map[string]uint64{}
	for _, o := range doc.Nftables {
		if o.Counter != nil {
			out[o.Counter.Name] = o.Counter.Packets
		}
	}
	return out, nil
}
