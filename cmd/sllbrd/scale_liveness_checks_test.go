package main

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/admin"
	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/maglev"
)

// scaleReference is service-a's Maglev tables (one per family; both alike:
// the same identifiers and size) with every endpoint and with t2's out,
// built by package maglev as sllbrd builds them, and what removing t2's
// endpoints in one step moves.
type scaleReference struct {
	all, live        *maglev.Table
	size, victims    int
	needed, needless int // entries moved in one step: from t2's endpoints, between live ones
}

func newScaleReference(t *testing.T, n int) scaleReference {
	t.Helper()
	p, err := maglev.NewParams(n)
	if err != nil {
		t.Fatal(err)
	}
	all, live := make([]bool, n), make([]bool, n)
	ref := scaleReference{size: p.Size()}
	for i := range n {
		all[i], live[i] = true, scaleTarget(i) != "t2"
		if !live[i] {
			ref.victims++
		}
	}
	if ref.all, err = p.Build(all); err != nil {
		t.Fatal(err)
	}
	if ref.live, err = p.Build(live); err != nil {
		t.Fatal(err)
	}
	e0, e1 := ref.all.AppendEntrySlots(nil), ref.live.AppendEntrySlots(nil)
	for i, id := range e0 {
		switch {
		case !live[id]:
			ref.needed++
		case e1[i] != id:
			ref.needless++
		}
	}
	return ref
}

// explainFlow asks inst where a UDP flow from the client's port to vip:5000
// goes.
func explainFlow(t *testing.T, inst *e2e.Instance, vip netip.Addr, port uint16) admin.Explanation {
	t.Helper()
	var x admin.Explanation
	src := netip.AddrPortFrom(lab.ClientAddrs().For(vip), port)
	sllbrdJSON(t, inst.AdminSocket, &x, "explain", "udp", src.String(), netip.AddrPortFrom(vip, 5000).String())
	return x
}

// checkScaleLookup: explain says both families' tables have the reference's
// size and active endpoints.
func checkScaleLookup(t *testing.T, inst *e2e.Instance, ref scaleReference, active int) {
	t.Helper()
	for _, vip := range []netip.Addr{vip4, vip6} {
		x := explainFlow(t, inst, vip, 40000)
		if x.Lookup == nil || x.Lookup.TableSize != ref.size || x.Lookup.ActiveEndpoints != active {
			t.Errorf("explain, %v: lookup %+v, want %d active endpoints in %d entries", vip, x.Lookup, active, ref.size)
		}
	}
}

// explainScaleFlows returns the target explain names for each of s's
// flows, and checks that the endpoint is the one the reference table tb
// holds for the flow's hash: sllbrd's table is Maglev's for that set of
// endpoints, however many applies it took to get there.
func explainScaleFlows(t *testing.T, inst *e2e.Instance, tb *maglev.Table, n int, s *askStream) map[int]string {
	t.Helper()
	out := map[int]string{}
	for i, f := range s.flows {
		x := explainFlow(t, inst, f.vip, f.port)
		if x.Lookup == nil || x.Endpoint == nil {
			t.Fatalf("explain, flow from port %d to %v: %+v", f.port, f.vip, x)
		}
		h, err := strconv.ParseUint(x.Lookup.Hash, 0, 32)
		if err != nil {
			t.Fatalf("explain: hash %q: %v", x.Lookup.Hash, err)
		}
		if id, ok := tb.Lookup32(uint32(h)); !ok || id != x.Endpoint.ID {
			t.Errorf("flow from port %d to %v: explain says endpoint %d, Maglev's table %d", f.port, f.vip, x.Endpoint.ID, id)
		}
		out[i] = scaleTargetOf(n, x.Endpoint.Address)
	}
	return out
}

// checkScaleDead: exactly t2's addresses are dead, or none when t2 is back
// (rounds 2). Over rounds changes of t2 (its death, then its return) sllbrd
// counted the entries moved: at least those a one-step change moves from
// (and to) t2's endpoints, both families; it logs how many more the changes
// in several applies moved.
func checkScaleDead(t *testing.T, inst *e2e.Instance, ref scaleReference, n, rounds int) {
	t.Helper()
	_, body, err := inst.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var dead []string
	for line := range strings.SplitSeq(body, "\n") {
		if !strings.HasPrefix(line, "sllbrd_endpoint_alive{") || !strings.HasSuffix(line, " 0") {
			continue
		}
		_, rest, _ := strings.Cut(line, `address="`)
		a, _, _ := strings.Cut(rest, `"`)
		addr, err := netip.ParseAddr(a)
		if err != nil || scaleTargetOf(n, addr) != "t2" {
			t.Errorf("dead: %s, not an address of t2", line)
		}
		dead = append(dead, a)
	}
	if want := 2 * ref.victims * (rounds % 2); len(dead) != want {
		t.Errorf("%d endpoint addresses dead, want %d", len(dead), want)
	}
	needed, _, err := inst.Metric(`sllbrd_liveness_moved_entries_total{kind="needed"}`)
	needless, _, err2 := inst.Metric(`sllbrd_liveness_moved_entries_total{kind="needless"}`)
	if err != nil || err2 != nil {
		t.Fatalf("moved entries: %v, %v", err, err2)
	}
	if min := 2 * rounds * ref.needed; needed < float64(min) {
		t.Errorf("sllbrd counted %v needed entry moves, want at least the %d of t2's endpoints' entries", needed, min)
	}
	t.Logf("after %d change(s) of t2's %d endpoints, both families: sllbrd counted %v needed and %v needless entry moves; in one step Maglev moves %d and %d (%.2f %% of the live endpoints' entries needlessly), so the applies moved %.2f × the needless entries of one step",
		rounds, ref.victims, needed, needless, 2*rounds*ref.needed, 2*rounds*ref.needless,
		100*float64(ref.needless)/float64(ref.size-ref.needed), needless/float64(2*rounds*ref.needless))
}

// scaleApplies is one change of t2 as sllbrd's log tells it: when the
// prober decided its addresses' transitions, and the applies after.
type scaleApplies struct {
	first, last time.Time       // the first and last transition decided
	count       int             // transitions
	done        time.Time       // the last apply done
	latencies   []time.Duration // in the order of the applies
}

// readScaleApplies reads from inst's log the transitions to alive (or
// dead) decided since since, and the applies that followed.
func readScaleApplies(t *testing.T, inst *e2e.Instance, alive bool, since time.Time) scaleApplies {
	t.Helper()
	var a scaleApplies
	var found []time.Time
	for _, r := range logRecords(t, inst, "liveness: address "+aliveWord(alive), since) {
		if r.Level == "INFO" { // at DEBUG: one of many, counted below
			found = append(found, r.Time)
			a.count++
		}
	}
	for _, r := range logRecords(t, inst, "liveness: many addresses changed at once", since) {
		if n := map[bool]int{true: r.Alive, false: r.Dead}[alive]; n > 0 {
			found = append(found, r.Time)
			a.count += n
		}
	}
	if len(found) == 0 {
		t.Fatalf("the log says no address became %s", aliveWord(alive))
	}
	slices.SortFunc(found, time.Time.Compare)
	a.first, a.last = found[0], found[len(found)-1]
	for _, r := range logRecords(t, inst, "dataplane programmed", a.first) {
		d, err := time.ParseDuration(r.Latency)
		if err != nil {
			t.Errorf("dataplane programmed: latency %q: %v", r.Latency, err)
			continue
		}
		a.latencies = append(a.latencies, d)
		a.done = r.Time
	}
	if len(a.latencies) == 0 || a.done.Before(a.last) {
		t.Fatalf("the log says no apply followed the last transition to %s (%d applies)", aliveWord(alive), len(a.latencies))
	}
	return a
}

func aliveWord(alive bool) string { return map[bool]string{true: "alive", false: "dead"}[alive] }

// log logs a change of t2 from origin (the fault, or its end).
func (a scaleApplies) log(t *testing.T, what string, origin time.Time, ref time.Duration) {
	t.Helper()
	lat := slices.Clone(a.latencies)
	slices.Sort(lat)
	t.Logf("%s: %d addresses %v to %v after (%.2f to %.2f × %v); %d applies, from the prober's change to the kernel programmed %v (the first, the loop idle) and %v to %v (median %v; a change waits for the apply before it), the last done %v after",
		what, a.count, a.first.Sub(origin).Round(time.Millisecond), a.last.Sub(origin).Round(time.Millisecond),
		a.first.Sub(origin).Seconds()/ref.Seconds(), a.last.Sub(origin).Seconds()/ref.Seconds(), ref,
		len(lat), a.latencies[0].Round(time.Millisecond), lat[0].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond),
		lat[len(lat)/2].Round(time.Millisecond), a.done.Sub(origin).Round(time.Millisecond))
}

// settle is how long after an apply is logged the stream may still see
// answers of the tables before it (requests in flight).
const settle = 50 * time.Millisecond

// checkScaleFlows checks the stream's answers around t2's death (applies
// death, from the fault at faultAt) and return (applies back, from
// restoredAt): before the death is decided every flow is answered by its
// target; from the death's last apply to the restore, each flow by the
// target explain named then (final), t2's flows by another; after the
// return's last apply, by its own target again. While the applies of a
// change run, flows may move more than once (an apply takes out the
// addresses found dead so far): counted and logged, per family.
func checkScaleFlows(t *testing.T, s *askStream, answers []answer, faultAt, restoredAt time.Time, death, back scaleApplies, final map[int]string) {
	t.Helper()
	type flowSeen struct {
		last                 string
		targets              map[string]bool // answered during the death's applies and after, until the restore
		moves, backMoves     int
		movedAt, firstBackAt time.Time
	}
	seen := map[int]*flowSeen{}
	for i := range s.flows {
		seen[i] = &flowSeen{targets: map[string]bool{}}
	}
	for _, a := range answers {
		f, fs := s.flows[a.flow], seen[a.flow]
		moved := fs.last != "" && a.target != fs.last
		fs.last = a.target
		switch {
		case a.at.Before(death.first.Add(-settle)):
			if a.target != f.start {
				t.Errorf("flow from port %d to %v of %s answered by %s %v after the fault, before any address was found dead", f.port, f.vip, f.start, a.target, a.at.Sub(faultAt))
			}
		case a.at.Before(restoredAt):
			if a.at.After(death.done.Add(settle)) && a.target != final[a.flow] {
				t.Errorf("flow from port %d to %v of %s answered by %s %v after the fault, after the last apply, where explain says %s", f.port, f.vip, f.start, a.target, a.at.Sub(faultAt), final[a.flow])
			}
			if a.target != f.start && fs.movedAt.IsZero() {
				fs.movedAt = a.at
			}
			if moved {
				fs.moves++
			}
			fs.targets[a.target] = true
		case a.at.Before(back.done.Add(settle)):
			if moved {
				fs.backMoves++
			}
			if a.target == f.start && fs.firstBackAt.IsZero() {
				fs.firstBackAt = a.at
			}
		case a.target != f.start:
			t.Errorf("flow from port %d to %v of %s answered by %s %v after t2 was back, after the last apply", f.port, f.vip, f.start, a.target, a.at.Sub(restoredAt))
		}
	}
	for _, fam := range []bool{true, false} {
		var firstMoved, allMoved, firstBack time.Time
		var onT2, twice, live, liveMoved, liveBack int
		for i, f := range s.flows {
			fs := seen[i]
			if f.vip.Is4() != fam {
				continue
			}
			if f.start != "t2" {
				live++
				if fs.moves > 0 {
					liveMoved++
				}
				if fs.backMoves > 0 {
					liveBack++
				}
				continue
			}
			onT2++
			if fs.movedAt.IsZero() || final[i] == "t2" {
				t.Errorf("flow from port %d to %v of t2: not answered elsewhere after the fault (explain says %s)", f.port, f.vip, final[i])
				continue
			}
			if firstMoved.IsZero() || fs.movedAt.Before(firstMoved) {
				firstMoved = fs.movedAt
			}
			if fs.movedAt.After(allMoved) {
				allMoved = fs.movedAt
			}
			if len(fs.targets) > 1 {
				twice++
			}
			if !fs.firstBackAt.IsZero() && (firstBack.IsZero() || fs.firstBackAt.Before(firstBack)) {
				firstBack = fs.firstBackAt
			}
		}
		name := map[bool]string{true: "ipv4", false: "ipv6"}[fam]
		if onT2 == 0 || firstMoved.IsZero() {
			t.Errorf("%s: none of t2's %d flows moved", name, onT2)
			continue
		}
		first, all := firstMoved.Sub(faultAt), allMoved.Sub(faultAt)
		t.Logf("%s: t2's %d flows answered elsewhere %v to %v after the fault (%.2f to %.2f × the detection time), %d of them by more than one target while the applies ran; %d of the %d flows of live endpoints moved while t2's death was applied, %d while its return was; t2's flows back on it from %v after its link came up",
			name, onT2, first.Round(time.Millisecond), all.Round(time.Millisecond), first.Seconds()/labDetection.Seconds(), all.Seconds()/labDetection.Seconds(),
			twice, liveMoved, live, liveBack, firstBack.Sub(restoredAt).Round(time.Millisecond))
		if lo, hi := labDetection-labInterval-50*time.Millisecond, labDetection+labInterval+scaleApplySlack; first < lo || all > hi {
			t.Errorf("%s: t2's flows answered elsewhere %v to %v after the fault, want within [%v, %v]", name, first, all, lo, hi)
		}
		if liveMoved > live/2 {
			t.Errorf("%s: %d of %d flows of live endpoints moved while t2's death was applied", name, liveMoved, live)
		}
		if back := firstBack.Sub(restoredAt); firstBack.IsZero() || back < labHoldDown-50*time.Millisecond {
			t.Errorf("%s: t2's flows back on it %v after its link came up, want at least the hold-down %v", name, back, labHoldDown)
		}
	}
}
