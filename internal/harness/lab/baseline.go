package lab

import (
	"context"
	"fmt"
	"net/netip"
)

// BaselineOptions choose how plain kernel forwarding spreads VIP traffic.
type BaselineOptions struct {
	// ECMP routes each VIP in the LBs over all targets (multipath, L4 hash);
	// otherwise every VIP goes to target t1 only.
	ECMP bool
}

// Baseline programs plain kernel forwarding, the reference without sllbrd:
// the gateway routes each VIP via lb1, and every LB routes it via target t1
// (or ECMP over all targets). It replaces earlier baseline routes.
func (l *Lab) Baseline(ctx context.Context, o BaselineOptions) error {
	for _, vip := range l.opts.VIPs {
		dst := netip.PrefixFrom(vip, vip.BitLen()).String()
		gwArgs := []string{family(vip), "route", "replace", dst, "via", LBGatewaySide(1).For(vip).String(), "dev", GatewayLink}
		if err := ip(ctx, l.NS(GatewayNode), gwArgs...); err != nil {
			return fmt.Errorf("baseline: gateway: %w", err)
		}
		lbArgs := append([]string{family(vip), "route", "replace", dst}, l.viaTargets(vip, o.ECMP)...)
		for _, lb := range l.LBs() {
			if err := ip(ctx, l.NS(lb), lbArgs...); err != nil {
				return fmt.Errorf("baseline: %s: %w", lb, err)
			}
		}
	}
	l.log.Logf("lab %s: baseline forwarding (ECMP %v)", l.runID, o.ECMP)
	return nil
}

// RemoveBaseline deletes the baseline VIP routes from the gateway and LBs.
func (l *Lab) RemoveBaseline(ctx context.Context) error {
	nodes := append([]string{GatewayNode}, l.LBs()...)
	for _, vip := range l.opts.VIPs {
		dst := netip.PrefixFrom(vip, vip.BitLen()).String()
		for _, n := range nodes {
			// A missing route is fine: remove what is there.
			_ = ip(ctx, l.NS(n), family(vip), "route", "del", dst)
		}
	}
	for _, n := range nodes {
		for _, vip := range l.opts.VIPs {
			out, err := run(ctx, "ip", "-n", l.NS(n), family(vip), "route", "show", netip.PrefixFrom(vip, vip.BitLen()).String())
			if err != nil {
				return fmt.Errorf("remove baseline: %w", err)
			}
			if out != "" {
				return fmt.Errorf("remove baseline: %s still routes %s: %s", n, vip, out)
			}
		}
	}
	return nil
}

func (l *Lab) viaTargets(vip netip.Addr, ecmp bool) []string {
	if !ecmp {
		return []string{"via", TargetAddrs(1).For(vip).String(), "dev", TargetLink}
	}
	var args []string
	for i := 1; i <= l.opts.Targets; i++ {
		args = append(args, "nexthop", "via", TargetAddrs(i).For(vip).String(), "dev", TargetLink)
	}
	return args
}

// RouteVIPsVia makes the gateway route every VIP via the given LBs (numbers
// from 1; ECMP when several), replacing earlier VIP routes there. Tests use
// it instead of BGP, or to steer the same flows through another LB.
func (l *Lab) RouteVIPsVia(ctx context.Context, lbs ...int) error {
	for _, vip := range l.opts.VIPs {
		args := []string{family(vip), "route", "replace", netip.PrefixFrom(vip, vip.BitLen()).String()}
		for _, i := range lbs {
			if len(lbs) > 1 {
				args = append(args, "nexthop")
			}
			args = append(args, "via", LBGatewaySide(i).For(vip).String(), "dev", GatewayLink)
		}
		if err := ip(ctx, l.NS(GatewayNode), args...); err != nil {
			return fmt.Errorf("route VIPs via LBs %v: %w", lbs, err)
		}
	}
	return nil
}
