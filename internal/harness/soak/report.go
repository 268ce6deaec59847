package soak

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// NoFault is the Kind of the report row for what no event explains.
const NoFault Kind = "(no fault)"

// Row is the report of one fault kind.
type Row struct {
	Kind  Kind
	Count int // events of the kind
	// The loss window over the kind's events (each event's Worst; an
	// event without loss counts as 0), nearest-rank percentiles.
	LossP50, LossP99, LossMax time.Duration
	Bound                     time.Duration // the spec's documented bound
	StreamStallMax            time.Duration // the longest stream stall
	Broken                    int           // stream connections broken
	Why                       map[string]int
}

// Rows reports a per fault kind, in the order of specs, then kinds that
// ran without a spec (sorted), then a NoFault row when something is
// unexplained: its Count is the number of unexplained runs, its loss their
// loss.
func Rows(a Analysis, specs []Spec) []Row {
	byKind := map[Kind][]EventLoss{}
	for _, el := range a.Events {
		byKind[el.Event.Kind] = append(byKind[el.Event.Kind], el)
	}
	var rows []Row
	for _, s := range specs {
		r := kindRow(s.Kind, byKind[s.Kind])
		r.Bound = s.Bound
		rows = append(rows, r)
		delete(byKind, s.Kind)
	}
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		rows = append(rows, kindRow(k, byKind[k]))
	}
	if len(a.Unexplained)+len(a.UnexplainedStalls)+len(a.UnexplainedBreaks) > 0 {
		rows = append(rows, noFaultRow(a))
	}
	return rows
}

func kindRow(k Kind, events []EventLoss) Row {
	r := Row{Kind: k, Count: len(events), Why: map[string]int{}}
	loss := make([]time.Duration, 0, len(events))
	for _, el := range events {
		loss = append(loss, el.Worst)
		r.StreamStallMax = max(r.StreamStallMax, el.StallMax)
		for why, n := range el.Breaks {
			r.Why[why] += n
			r.Broken += n
		}
	}
	r.LossP50, r.LossP99, r.LossMax = Percentiles(loss)
	return r
}

func noFaultRow(a Analysis) Row {
	r := Row{Kind: NoFault, Count: len(a.Unexplained), Why: map[string]int{}}
	loss := make([]time.Duration, 0, len(a.Unexplained))
	for _, run := range a.Unexplained {
		loss = append(loss, run.Loss)
	}
	r.LossP50, r.LossP99, r.LossMax = Percentiles(loss)
	for _, s := range a.UnexplainedStalls {
		r.StreamStallMax = max(r.StreamStallMax, s.RTT)
	}
	for _, b := range a.UnexplainedBreaks {
		r.Why[b.Err]++
		r.Broken++
	}
	return r
}

// Percentiles returns the nearest-rank p50 and p99 and the maximum; zeros
// for no values. It sorts d.
func Percentiles(d []time.Duration) (p50, p99, top time.Duration) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	slices.Sort(d)
	rank := func(p int) time.Duration { return d[(p*len(d)+99)/100-1] }
	return rank(50), rank(99), d[len(d)-1]
}

// Markdown renders rows as one table, a line per fault kind.
func Markdown(rows []Row) string {
	var b strings.Builder
	b.WriteString("| fault | count | loss p50 | loss p99 | loss max | bound | longest stream stall | broken | why |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range rows {
		bound := "-"
		if r.Bound > 0 {
			bound = ms(r.Bound)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %d | %s |\n", cell(string(r.Kind)), r.Count,
			ms(r.LossP50), ms(r.LossP99), ms(r.LossMax), bound, ms(r.StreamStallMax), r.Broken, why(r.Why))
	}
	return b.String()
}

// ms prints a duration to the millisecond.
func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

func why(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s x%d", cell(k), m[k]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// cell makes s safe inside a table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
}
