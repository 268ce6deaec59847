package identifiers

import (
	"cmp"
	"slices"
	"time"
)

// Pod is a pod that counts as an endpoint of the Service.
type Pod struct {
	UID     string
	Name    string
	Created time.Time
	// Terminating: the pod is being deleted. It keeps the identifier it
	// claims until a new pod needs one, and never gets a new one.
	Terminating bool
	// Addresses are the pod's endpoint addresses, in any form that is
	// equal for equal addresses. An address is listed for one pod only.
	Addresses []string
}

// Claim says that the pod UID was given identifier ID by an earlier run.
type Claim struct {
	UID string
	ID  int
}

// Assignment is the outcome of Assign.
type Assignment struct {
	// IDs maps the UID of every pod that has an identifier to it.
	IDs map[string]int
	// OverLimit lists the pods left without an identifier, oldest first.
	OverLimit []Pod
	// Duplicates lists the pods left out because another pod has one of
	// their addresses (see the package rules), oldest first.
	Duplicates []Duplicate
}

// older orders pods by creation time, then name, then UID.
func older(a, b Pod) int {
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return cmp.Compare(a.UID, b.UID)
}

// Assign gives each pod an identifier in 0..max-1 following the package
// rules. Claims of pods not in pods are ignored (their identifiers are free).
func Assign(max int, pods []Pod, claims []Claim) Assignment {
	claimed := map[string][]int{}
	for _, c := range claims {
		if c.ID >= 0 && c.ID < max {
			claimed[c.UID] = append(claimed[c.UID], c.ID)
		}
	}
	byAge, dups := unique(pods, claimed)
	slices.SortFunc(byAge, older)
	inherit(dups, claimed)
	out := Assignment{IDs: make(map[string]int, len(pods)), Duplicates: dups}
	taken := make(map[int]bool, len(pods))
	// Keep valid claims, the oldest pod first; a pod with several claims
	// keeps its lowest free one.
	for _, p := range byAge {
		ids := claimed[p.UID]
		slices.Sort(ids)
		for _, id := range ids {
			if !taken[id] {
				taken[id], out.IDs[p.UID] = true, id
				break
			}
		}
	}
	// The identifiers terminating pods hold, lowest first, with their
	// holders: a new pod takes them over before any free one.
	var handover []int
	holder := map[int]string{}
	for _, p := range byAge {
		if id, ok := out.IDs[p.UID]; ok && p.Terminating {
			handover = append(handover, id)
			holder[id] = p.UID
		}
	}
	slices.Sort(handover)
	next := 0
	for _, p := range byAge {
		if _, ok := out.IDs[p.UID]; ok || p.Terminating {
			continue
		}
		if len(handover) > 0 {
			id := handover[0]
			handover = handover[1:]
			delete(out.IDs, holder[id])
			out.IDs[p.UID] = id
			continue
		}
		for next < max && taken[next] {
			next++
		}
		if next >= max {
			out.OverLimit = append(out.OverLimit, p)
			continue
		}
		taken[next], out.IDs[p.UID] = true, next
	}
	return out
}
