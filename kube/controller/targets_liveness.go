package controller

import (
	"cmp"
	"time"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetpod"
	"github.com/sllbrd/sllbrd/model"
)

// The BFD timing of a Gateway's entry on a target pod
// (targetpod.Gateway.Liveness): the SLLBRs run a BFD session with each
// endpoint address of a Service whose endpoint liveness probe is bfd, and
// the pod's target side answers only when its entry asks it to.

// bfdTimings collects, per Gateway, the strictest endpoint liveness of the
// pod's Services of that Gateway whose probe is bfd.
type bfdTimings map[string]model.Liveness

// liveness returns the value of each Gateway's entry (gatewayLiveness).
func (b bfdTimings) liveness() map[string]*targetpod.GatewayLiveness {
	out := make(map[string]*targetpod.GatewayLiveness, len(b))
	for gw, l := range b {
		out[gw] = gatewayLiveness(l)
	}
	return out
}

// add counts a Service of gateway with liveness l; icmp and off count for
// nothing.
func (b bfdTimings) add(gateway string, l model.Liveness) {
	if l.Off() || l.Probe != model.ProbeBFD {
		return
	}
	if cur, ok := b[gateway]; !ok || stricterBFD(l, cur) {
		b[gateway] = l
	}
}

// stricterBFD reports whether a finds a dead target sooner than b: the
// shorter Detection, then the shorter Interval (the SLLBRs' own merge of
// Services sharing an address orders them the same way).
func stricterBFD(a, b model.Liveness) bool {
	return cmp.Or(cmp.Compare(a.Detection(), b.Detection()), cmp.Compare(a.Interval, b.Interval)) < 0
}

// gatewayLiveness is l as the target annotation holds it. The annotation
// takes durations down to the nanosecond, the target annotation whole
// milliseconds: the interval is rounded up, so that the target side never
// sends faster than the Service allows (the sessions agree on the slower
// of the two sides' intervals, so detection is at most Multiplier ms later
// than asked). Rounding up can take interval × multiplier past
// kube.MaxLivenessDetection by less than Multiplier ms (8571.4ms × 7 is
// within a minute, 8572ms × 7 is not), so the interval is then clamped to
// the bounds the target checks (targetpod.GatewayLiveness), which it would
// otherwise refuse whole.
func gatewayLiveness(l model.Liveness) *targetpod.GatewayLiveness {
	ms := int64((l.Interval + time.Millisecond - 1) / time.Millisecond)
	hi := min(kube.MaxLivenessInterval.Milliseconds(), kube.MaxLivenessDetection.Milliseconds()/int64(max(l.Multiplier, 1)))
	ms = max(min(ms, hi), kube.MinLivenessInterval.Milliseconds())
	return &targetpod.GatewayLiveness{IntervalMilliseconds: ms, Multiplier: l.Multiplier}
}

// serviceLiveness returns the endpoint liveness of a Service of the
// Gateway as the SLLBRs read it (the Gateway's translation): off when they
// leave the Service out (an invalid annotation) or the Gateway is gone.
func (v *targetView) serviceLiveness(c *Controller, gateway, service string) model.Liveness {
	state := v.state(c, gateway)
	if state == nil {
		return model.Liveness{}
	}
	for _, s := range state.Services {
		if s.Name == service {
			return s.Liveness
		}
	}
	return model.Liveness{}
}

// setLiveness sets the Liveness of each of gws (the Gateways Admit kept)
// to its value in byName (nil when absent).
func setLiveness(gws []targetpod.Gateway, byName map[string]*targetpod.GatewayLiveness) {
	for i := range gws {
		gws[i].Liveness = byName[gws[i].Name]
	}
}
