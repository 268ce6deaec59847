package targetpod

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/sllbrd/sllbrd/internal/targetnet"
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
	return errors.Join(errs...)
}

// validateAlone checks g as the only Gateway of a configuration, whatever
// its table (tables are handed out later, by Next).
func (g Gateway) validateAlone() error {
	g.Table = targetnet.TableMin
	return Desired{Gateways: []Gateway{g}}.Validate()
}
