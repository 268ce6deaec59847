package soak

import (
	"fmt"
	"strings"
)

// diffLines is how many differing lines Diff shows.
const diffLines = 20

// Diff returns "" when a and b are equal, else a short line diff: the line
// number where they start to differ, then up to 20 lines, "- " for lines
// of a that b lacks and "+ " for lines of b that a lacks (compared as
// multisets between the common prefix and suffix; when they hold the same
// lines in another order, the first pair that differs).
func Diff(a, b string) string {
	if a == b {
		return ""
	}
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	pre := 0
	for pre < len(al) && pre < len(bl) && al[pre] == bl[pre] {
		pre++
	}
	suf := 0
	for suf < len(al)-pre && suf < len(bl)-pre && al[len(al)-1-suf] == bl[len(bl)-1-suf] {
		suf++
	}
	am, bm := al[pre:len(al)-suf], bl[pre:len(bl)-suf]
	var out []string
	for _, l := range missing(am, bm) {
		out = append(out, "- "+l)
	}
	for _, l := range missing(bm, am) {
		out = append(out, "+ "+l)
	}
	if len(out) == 0 { // same lines, another order
		out = []string{"- " + am[0], "+ " + bm[0]}
	}
	more := ""
	if len(out) > diffLines {
		more = fmt.Sprintf("\n... and %d more", len(out)-diffLines)
		out = out[:diffLines]
	}
	return fmt.Sprintf("differ from line %d:\n%s%s", pre+1, strings.Join(out, "\n"), more)
}

// missing returns the lines of x that y lacks, counting repeats, in x's
// order.
func missing(x, y []string) []string {
	have := map[string]int{}
	for _, l := range y {
		have[l]++
	}
	var out []string
	for _, l := range x {
		if have[l] > 0 {
			have[l]--
			continue
		}
		out = append(out, l)
	}
	return out
}
