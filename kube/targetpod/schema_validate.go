package targetpod

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/model/vip"
)

// Validate is the one check of a target network configuration, applied on
// both sides: `sllbrd target` applies nothing of a Desired that fails it
// (ParseDesired), and the controller writes no annotation that fails it
// (it leaves out what would, see Admit). It checks, per Gateway, that next
// hops are listed under their own family and that every VIP is one by
// model/vip (the rule of the CRD and of translation); then what
// targetnet applies (names, tables in targetnet.TableMin..TableMax,
// subnets, next hops in the subnets and at most targetnet.MaxNextHops per
// family, at most targetnet.MaxVIPs per Gateway, a VIP in one Gateway
// only). Every error wraps targetnet.ErrInvalid and names the Gateway.
func (d Desired) Validate() error {
	var errs []error
	for _, g := range d.Gateways {
		if err := g.checkValues(); err != nil {
			errs = append(errs, fmt.Errorf("%w: gateway %q: %w", targetnet.ErrInvalid, g.Name, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return d.Net().Validate()
}

// checkValues checks what targetnet cannot see (the families the
// annotation lists next hops under) or checks less strictly (VIPs).
func (g Gateway) checkValues() error {
	if slices.ContainsFunc(g.NextHops.IPv4, func(a netip.Addr) bool { return !a.Is4() }) ||
		slices.ContainsFunc(g.NextHops.IPv6, func(a netip.Addr) bool { return !a.Is6() || a.Is4In6() }) {
		return errors.New("a next hop is listed under the other family")
	}
	var errs []error
	for _, v := range g.VIPs {
		errs = append(errs, vip.Check(v))
	}
	if g.Liveness != nil {
		errs = append(errs, g.Liveness.validate())
	}
	return errors.Join(errs...)
}

// validate checks the BFD timing against the annotation's bounds.
func (l GatewayLiveness) validate() error {
	lo, hi := kube.MinLivenessInterval.Milliseconds(), kube.MaxLivenessInterval.Milliseconds()
	switch {
	case l.IntervalMilliseconds < lo || l.IntervalMilliseconds > hi:
		return fmt.Errorf("liveness interval %d ms outside %d..%d ms", l.IntervalMilliseconds, lo, hi)
	case l.Multiplier < 1 || l.Multiplier > kube.MaxLivenessMultiplier:
		return fmt.Errorf("liveness multiplier %d outside 1..%d", l.Multiplier, kube.MaxLivenessMultiplier)
	case l.Interval()*time.Duration(l.Multiplier) > kube.MaxLivenessDetection:
		return fmt.Errorf("liveness detection %v (interval × multiplier) above %v",
			l.Interval()*time.Duration(l.Multiplier), kube.MaxLivenessDetection)
	}
	return nil
}

// validateAlone checks g as the only Gateway of a configuration, whatever
// its table (tables are handed out later, by Next).
func (g Gateway) validateAlone() error {
	g.Table = targetnet.TableMin
	return Desired{Gateways: []Gateway{g}}.Validate()
}
