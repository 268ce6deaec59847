package identifiers

import "slices"

// Duplicate is a pod left out because another pod has one of its
// addresses: the dataplane maps addresses to identifiers, so an address
// listed for two pods would give one of them the other's identifier.
type Duplicate struct {
	Pod Pod
	// Address is the address they share, Holder the pod listed with it.
	Address string
	Holder  Pod
	// Why says why Holder comes first.
	Why string
}

// precedence orders pods that share an address: a pod that is not being
// deleted first, then one that claims an identifier (it is listed with the
// address), then the older.
func precedence(claimed map[string][]int) func(a, b Pod) int {
	return func(a, b Pod) int {
		if a.Terminating != b.Terminating {
			return boolOrder(!a.Terminating, !b.Terminating)
		}
		if ca, cb := len(claimed[a.UID]) > 0, len(claimed[b.UID]) > 0; ca != cb {
			return boolOrder(ca, cb)
		}
		return older(a, b)
	}
}

// boolOrder puts true first.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// unique keeps one pod per address, the first by precedence, and returns
// the pods kept and the others (oldest first) with the pod that keeps
// their address.
func unique(pods []Pod, claimed map[string][]int) ([]Pod, []Duplicate) {
	order := slices.Clone(pods)
	slices.SortFunc(order, precedence(claimed))
	holders := map[string]Pod{}
	var kept []Pod
	var dups []Duplicate
	for _, p := range order {
		taken := slices.IndexFunc(p.Addresses, func(a string) bool { _, ok := holders[a]; return ok })
		if taken >= 0 {
			h := holders[p.Addresses[taken]]
			dups = append(dups, Duplicate{Pod: p, Address: p.Addresses[taken], Holder: h, Why: why(h, p, claimed)})
			continue
		}
		for _, a := range p.Addresses {
			holders[a] = p
		}
		kept = append(kept, p)
	}
	slices.SortFunc(dups, func(a, b Duplicate) int { return older(a.Pod, b.Pod) })
	return kept, dups
}

// why says why holder comes before p.
func why(holder, p Pod, claimed map[string][]int) string {
	switch {
	case p.Terminating && !holder.Terminating:
		return "it is not being deleted"
	case len(claimed[holder.UID]) > 0 && len(claimed[p.UID]) == 0:
		return "it is listed with the address already"
	}
	return "it is older"
}

// inherit gives a pod that has no claim of its own the claims of the
// terminating pods whose address it took: a replacement that keeps the
// address of the pod it replaces keeps its identifier too.
func inherit(dups []Duplicate, claimed map[string][]int) {
	heirs := map[string]bool{}
	for _, d := range dups {
		h := d.Holder
		if !d.Pod.Terminating || h.Terminating || (len(claimed[h.UID]) > 0 && !heirs[h.UID]) {
			continue
		}
		heirs[h.UID] = true
		claimed[h.UID] = append(claimed[h.UID], claimed[d.Pod.UID]...)
	}
}
