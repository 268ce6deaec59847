package targetpod

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/model/vip"
)

// Claim says that an L34Route puts a VIP into a Gateway's entry.
type Claim struct {
	VIP netip.Prefix
	// Route names the L34Route; "" for a VIP of the pod's current entry,
	// kept as it is (its Gateway's annotations are invalid).
	Route string
	// Created is when the route was created (zero for Route "").
	Created time.Time
}

// Candidate is a Gateway's entry as the controller would write it on a
// pod, before Admit: its VIPs are those of Claims.
type Candidate struct {
	Name     string
	Subnets  []netip.Prefix
	NextHops NextHops
	Claims   []Claim
}

// Reasons of a Rejection (the L34Route's condition reasons too).
const (
	// RejectedConflict: another Gateway of the pod has the VIP.
	RejectedConflict = "VIPConflict"
	// RejectedLimit: more VIPs or Gateways than a target takes.
	RejectedLimit = "TargetLimit"
	// RejectedInvalid: the entry or the VIP fails Validate.
	RejectedInvalid = "TargetRefused"
)

// Rejection is what Admit leaves out of a pod's configuration: VIPs that
// Route puts into Gateway's entry, and why.
type Rejection struct {
	Reason  string
	Gateway string
	Route   string // "" for the pod's current entry
	VIPs    []netip.Prefix
	// Holder is who keeps a VIP of a conflict: a route of another Gateway.
	HolderGateway, HolderRoute string
	// Err is the validation error (RejectedInvalid, RejectedLimit).
	Err error
}

// String says what is left out and why, naming the objects, e.g. "VIP
// 20.0.0.1/32 of L34Route b (Gateway g2) left out: L34Route a (Gateway g1)
// puts it on the pod too and takes precedence (the older route); a pod
// holds a VIP for one Gateway only".
func (r Rejection) String() string {
	what := "VIP " + joinPrefixes(r.VIPs) + " of " + routeOf(r.Route, r.Gateway)
	if len(r.VIPs) > 1 {
		what = "VIPs " + joinPrefixes(r.VIPs) + " of " + routeOf(r.Route, r.Gateway)
	}
	switch r.Reason {
	case RejectedConflict:
		return fmt.Sprintf("%s left out: %s puts it on the pod too and takes precedence (the older route); a pod holds a VIP for one Gateway only",
			what, routeOf(r.HolderRoute, r.HolderGateway))
	default:
		return fmt.Sprintf("%s left out: %v", what, r.Err)
	}
}

func routeOf(route, gateway string) string {
	if route == "" {
		return "the pod's current configuration of Gateway " + gateway
	}
	return "L34Route " + route + " (Gateway " + gateway + ")"
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// Admit returns the Gateways of cands (tables unset) that together pass
// Validate, and what it leaves out, so that one Gateway's fault never
// keeps the pod's other Gateways from being written. current is the pod's
// annotation value (its Gateways keep their tables). In order:
//
//  1. a claim of a VIP that is none (model/vip) is left out;
//  2. a Gateway whose entry fails Validate alone (subnets, next hops) is
//     left out whole;
//  3. beyond the routing tables of a pod, new Gateways are left out in
//     name order (the current ones keep theirs);
//  4. a route whose VIPs would take its Gateway past targetnet.MaxVIPs is
//     left out whole, routes taken oldest first;
//  5. a VIP claimed by several Gateways stays with the Gateway of the
//     oldest claim (then the lowest route name, then Gateway name), as the
//     Gateway API resolves conflicting routes; the current entry of a
//     Gateway kept as it is counts as oldest. It is left out of the others.
//
// Gateways left without VIPs are left out (without a Rejection of their
// own). Rejections are sorted by Gateway, route and reason.
func Admit(current string, cands []Candidate) ([]Gateway, []Rejection) {
	var rej []Rejection
	live := make([]*candidate, 0, len(cands))
	for _, c := range cands {
		c.Claims = slices.Clone(c.Claims) // the caller's stay as they are
		live = append(live, &candidate{Candidate: c})
	}
	slices.SortFunc(live, func(a, b *candidate) int { return cmp.Compare(a.Name, b.Name) })
	for _, c := range live {
		rej = dropInvalidVIPs(c, rej)
	}
	live, rej = dropInvalidEntries(live, rej)
	live, rej = dropBeyondTables(current, live, rej)
	for _, c := range live {
		rej = dropBeyondVIPLimit(c, rej)
	}
	rej = resolveConflicts(live, rej)
	var out []Gateway
	for _, c := range live {
		if g := c.entry(); len(g.VIPs) > 0 {
			out = append(out, g)
		}
	}
	slices.SortFunc(rej, func(a, b Rejection) int {
		return cmp.Or(cmp.Compare(a.Gateway, b.Gateway), cmp.Compare(a.Route, b.Route), cmp.Compare(a.Reason, b.Reason),
			cmp.Compare(a.HolderGateway, b.HolderGateway), cmp.Compare(a.HolderRoute, b.HolderRoute))
	})
	return out, rej
}

// candidate is a Candidate in Admit.
type candidate struct{ Candidate }

// entry is the Gateway of c's claims, without a table.
func (c *candidate) entry() Gateway {
	g := Gateway{Name: c.Name, Subnets: c.Subnets, NextHops: c.NextHops}
	for _, cl := range c.Claims {
		g.VIPs = append(g.VIPs, cl.VIP)
	}
	return normalize([]Gateway{g})[0]
}

// routes returns c's routes, oldest first (kept claims first), each with
// its VIPs sorted.
func (c *candidate) routes() []*routeClaims {
	byRoute := map[string]*routeClaims{}
	var out []*routeClaims
	for _, cl := range c.Claims {
		r := byRoute[cl.Route]
		if r == nil {
			r = &routeClaims{route: cl.Route, created: cl.Created}
			byRoute[cl.Route] = r
			out = append(out, r)
		}
		r.created = earlier(r.created, cl.Created)
		r.vips = append(r.vips, cl.VIP)
	}
	for _, r := range out {
		r.vips = sortedPrefixes(r.vips)
	}
	slices.SortFunc(out, func(a, b *routeClaims) int {
		return cmp.Or(a.created.Compare(b.created), cmp.Compare(a.route, b.route))
	})
	return out
}

type routeClaims struct {
	route   string
	created time.Time
	vips    []netip.Prefix
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// without returns c's claims other than those of route (and of vips,
// when given).
func (c *candidate) without(route string, vips []netip.Prefix) []Claim {
	return slices.DeleteFunc(slices.Clone(c.Claims), func(cl Claim) bool {
		return cl.Route == route && (vips == nil || slices.Contains(vips, cl.VIP))
	})
}

func dropInvalidVIPs(c *candidate, rej []Rejection) []Rejection {
	for _, r := range c.routes() {
		var bad []netip.Prefix
		var errs []error
		for _, v := range r.vips {
			if err := vip.Check(v); err != nil {
				bad, errs = append(bad, v), append(errs, err)
			}
		}
		if len(bad) > 0 {
			rej = append(rej, Rejection{Reason: RejectedInvalid, Gateway: c.Name, Route: r.route, VIPs: bad, Err: errors.Join(errs...)})
			c.Claims = c.without(r.route, bad)
		}
	}
	return rej
}

func dropInvalidEntries(live []*candidate, rej []Rejection) ([]*candidate, []Rejection) {
	var kept []*candidate
	for _, c := range live {
		g := c.entry()
		g.VIPs = nil // checked one by one (1) and in number (4)
		if err := g.validateAlone(); err != nil {
			rej = rejectAll(c, RejectedInvalid, err, rej)
			continue
		}
		kept = append(kept, c)
	}
	return kept, rej
}

// rejectAll rejects every route of c.
func rejectAll(c *candidate, reason string, err error, rej []Rejection) []Rejection {
	for _, r := range c.routes() {
		rej = append(rej, Rejection{Reason: reason, Gateway: c.Name, Route: r.route, VIPs: r.vips, Err: err})
	}
	return rej
}

func dropBeyondTables(current string, live []*candidate, rej []Rejection) ([]*candidate, []Rejection) {
	const tables = targetnet.TableMax - targetnet.TableMin + 1
	if len(live) <= tables {
		return live, rej
	}
	cur, _ := ParseDesired(current) // a broken value has no tables to keep
	has := func(c *candidate) bool {
		return slices.ContainsFunc(cur.Gateways, func(g Gateway) bool { return g.Name == c.Name })
	}
	var kept []*candidate
	for _, first := range []bool{true, false} { // the current ones, then new ones in name order
		for _, c := range live {
			if has(c) != first {
				continue
			}
			if len(kept) < tables {
				kept = append(kept, c)
				continue
			}
			rej = rejectAll(c, RejectedLimit, fmt.Errorf("more than %d Gateways select the pod: no routing table is left for this one", tables), rej)
		}
	}
	slices.SortFunc(kept, func(a, b *candidate) int { return cmp.Compare(a.Name, b.Name) })
	return kept, rej
}

func dropBeyondVIPLimit(c *candidate, rej []Rejection) []Rejection {
	held := map[netip.Prefix]bool{}
	for _, r := range c.routes() {
		n := len(held)
		for _, v := range r.vips {
			if !held[v] {
				n++
			}
		}
		if n > targetnet.MaxVIPs {
			rej = append(rej, Rejection{Reason: RejectedLimit, Gateway: c.Name, Route: r.route, VIPs: r.vips,
				Err: fmt.Errorf("it would make %d VIPs of Gateway %s on the pod; a target takes at most %d", n, c.Name, targetnet.MaxVIPs)})
			c.Claims = c.without(r.route, nil)
			continue
		}
		for _, v := range r.vips {
			held[v] = true
		}
	}
	return rej
}

// resolveConflicts leaves each VIP claimed by several Gateways with one.
func resolveConflicts(live []*candidate, rej []Rejection) []Rejection {
	type holder struct {
		c     *candidate
		claim Claim // the Gateway's oldest claim of the VIP
	}
	byVIP := map[netip.Prefix][]holder{}
	var vips []netip.Prefix
	for _, c := range live {
		best := map[netip.Prefix]Claim{}
		for _, cl := range c.Claims {
			if b, seen := best[cl.VIP]; !seen || olderClaim(cl, b) {
				best[cl.VIP] = cl
			}
		}
		for v, cl := range best {
			if len(byVIP[v]) == 0 {
				vips = append(vips, v)
			}
			byVIP[v] = append(byVIP[v], holder{c, cl})
		}
	}
	lost := map[[4]string][]netip.Prefix{} // gateway, route, holder gateway, holder route
	var keys [][4]string
	for _, v := range sortedPrefixes(vips) {
		hs := byVIP[v]
		if len(hs) < 2 {
			continue
		}
		win := slices.MinFunc(hs, func(a, b holder) int {
			return cmp.Or(a.claim.Created.Compare(b.claim.Created), cmp.Compare(a.claim.Route, b.claim.Route), cmp.Compare(a.c.Name, b.c.Name))
		})
		for _, h := range hs {
			if h.c == win.c {
				continue
			}
			for _, cl := range h.c.Claims {
				if cl.VIP != v {
					continue
				}
				k := [4]string{h.c.Name, cl.Route, win.c.Name, win.claim.Route}
				if len(lost[k]) == 0 {
					keys = append(keys, k)
				}
				lost[k] = append(lost[k], v)
			}
			h.c.Claims = slices.DeleteFunc(h.c.Claims, func(cl Claim) bool { return cl.VIP == v })
		}
	}
	for _, k := range keys {
		rej = append(rej, Rejection{Reason: RejectedConflict, Gateway: k[0], Route: k[1], VIPs: sortedPrefixes(lost[k]),
			HolderGateway: k[2], HolderRoute: k[3]})
	}
	return rej
}

// olderClaim orders two claims of one Gateway: the oldest route, then
// the lowest route name.
func olderClaim(a, b Claim) bool {
	return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Route, b.Route)) < 0
}
