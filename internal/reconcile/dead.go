package reconcile

import "net/netip"

// SetDead sets the endpoint addresses this SLLBR's own liveness checks find
// dead (internal/liveness), a producer's part of the desired state like the
// gateways: the ApplyFunc treats the endpoints at these addresses as not
// ready in the Services that check liveness. The loop keeps its own copy
// (false entries dropped); an unchanged set is ignored, and a change is
// coalesced and applied like any other. Nil and empty are the same set.
func (l *Loop) SetDead(dead map[netip.Addr]bool) {
	l.update(func() bool {
		if sameSet(dead, l.desired.Dead) {
			return false
		}
		next := make(map[netip.Addr]bool, len(dead))
		for a, d := range dead {
			if d {
				next[a] = true
			}
		}
		l.desired.Dead = next
		return true
	})
}

// sameSet reports whether a and b hold the same addresses set to true.
func sameSet(a, b map[netip.Addr]bool) bool {
	n := 0
	for k, v := range a {
		if v {
			if !b[k] {
				return false
			}
			n++
		}
	}
	for _, v := range b {
		if v {
			n--
		}
	}
	return n == 0
}
