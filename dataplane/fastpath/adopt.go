package fastpath

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// endpointComment describes an endpoint chain's rule; AdoptedMarks parses
// it back.
func endpointComment(service string, id int, mark uint32, addr fmt.Stringer) string {
	return fmt.Sprintf("endpoint %s %d mark %#x %s", service, id, mark, addr)
}

// Mark is an endpoint slot's fwmark found in the kernel.
type Mark struct {
	Service string
	ID      int
	Mark    uint32
}

// AdoptedMarks returns the marks of the endpoint chains among chains (chain
// name -> its rules' comments, as nft.Programmer.Chains reads them): what a
// previous run gave each endpoint slot. A slot listed with two marks (its
// two families disagree) is left out.
func AdoptedMarks(chains map[string][]string) []Mark {
	found := map[[2]string]uint32{}
	bad := map[[2]string]bool{}
	for name, comments := range chains {
		if !strings.HasPrefix(name, "e4-") && !strings.HasPrefix(name, "e6-") || len(comments) != 1 {
			continue
		}
		f := strings.Fields(comments[0])
		if len(f) < 5 || f[0] != "endpoint" || f[3] != "mark" {
			continue
		}
		mark, err := strconv.ParseUint(f[4], 0, 32)
		if _, idErr := strconv.Atoi(f[2]); err != nil || idErr != nil {
			continue
		}
		k := [2]string{f[1], f[2]}
		if prev, ok := found[k]; ok && prev != uint32(mark) {
			bad[k] = true
		}
		found[k] = uint32(mark)
	}
	var out []Mark
	for k, m := range found {
		if bad[k] {
			continue
		}
		id, _ := strconv.Atoi(k[1])
		out = append(out, Mark{Service: k[0], ID: id, Mark: m})
	}
	slices.SortFunc(out, func(a, b Mark) int { return cmp.Or(cmp.Compare(a.Service, b.Service), a.ID-b.ID) })
	return out
}
