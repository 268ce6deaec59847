package soak

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// Resources are resource figures of the soak's processes and kernel state,
// keyed "<who>/<what>": "lb1/rss_bytes", "lb1/goroutines", "lb1/fds",
// "lb1/nft_objects", "controller-a/rss_bytes", ...
type Resources map[string]float64

// Flat compares resources now against base: every key of base must be in
// now with |now-base| <= max(tol*|base|, floor), and now must have no key
// base lacks. It returns one message per violation naming the key and both
// values, base's keys first, each group sorted; none means flat. A NaN
// value always violates.
func Flat(base, now Resources, tol, floor float64) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(base)) {
		b := base[k]
		n, ok := now[k]
		if !ok {
			out = append(out, fmt.Sprintf("%s: missing now (base %g)", k, b))
			continue
		}
		allowed := max(tol*math.Abs(b), floor)
		if d := n - b; !(math.Abs(d) <= allowed) {
			out = append(out, fmt.Sprintf("%s: base %g now %g (%+g, allowed ±%g)", k, b, n, d, allowed))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(now)) {
		if _, ok := base[k]; !ok {
			out = append(out, fmt.Sprintf("%s: new now %g (not in base)", k, now[k]))
		}
	}
	return out
}
