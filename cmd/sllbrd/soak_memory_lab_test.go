package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// The processes' own memory over the soak. A Go process's anonymous RSS is
// mostly its heap, which the runtime lets grow to its goal (twice the live
// heap after the last collection, by default) with garbage before it
// collects, and keeps up to a tenth more free for reuse: read at any time,
// the RSS of a process without a leak moves by up to half. The 2026-12-07
// runs showed it: samples 2 MiB apart 30 s apart, the live heap flat. So
// memory is judged by the runtime's own accounts, read from the process's
// /metrics just before its RSS:
//   - the heap's goal (go_memstats_next_gc_bytes), which follows the live
//     heap at every collection: a leak in the heap raises it;
//   - the resident memory outside the heap (anonymous RSS less the heap in
//     use and the heap held free): stacks, the runtime's own structures,
//     anything that is not Go's.
// Both grow after start-up as caches and pools fill, and then hold. So
// memory has its own warm-up, the soak's first half: each process that
// lives through the soak must end with each within soakTolerance (or
// soakMemFloor) of its value at half-time. The live heap of the SLLBRs, the
// sidecars and the controller replicas is held to its value after the
// first warm-up besides (checkResources).

// soakMemEvery is how often the memory is sampled during the soak.
const soakMemEvery = 30 * time.Second

// memPoint is one process's memory at one time.
type memPoint struct {
	at   time.Duration // since the soak's start
	anon float64       // anonymous RSS, bytes
	// runtime is the Go runtime's own accounts at that time (runtimeParts).
	runtime map[string]float64
}

// runtimeParts are the go_memstats series read (and logged) with each
// sample, without the prefix and the _bytes suffix; memRequired are those
// the rule needs.
var (
	runtimeParts = []string{"heap_alloc", "heap_inuse", "heap_idle", "heap_released", "stack_inuse", "mspan_inuse",
		"gc_sys", "other_sys", "next_gc"}
	memRequired = []string{"heap_inuse", "heap_idle", "heap_released", "next_gc"}
)

// runtimeAccounts returns the runtimeParts in a Go process's /metrics
// (bytes); an error if one does not parse or one of memRequired is missing.
func runtimeAccounts(metrics string) (map[string]float64, error) {
	out := map[string]float64{}
	for line := range strings.SplitSeq(metrics, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		part, ok := strings.CutPrefix(f[0], "go_memstats_")
		if !ok {
			continue
		}
		part = strings.TrimSuffix(part, "_bytes")
		if !slices.Contains(runtimeParts, part) {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f[0], err)
		}
		out[part] = v
	}
	for _, part := range memRequired {
		if _, ok := out[part]; !ok {
			return nil, fmt.Errorf("no go_memstats_%s_bytes in %d bytes of metrics", part, len(metrics))
		}
	}
	return out, nil
}

// free is the heap the runtime holds free and has not returned to the
// system: resident, and not in use.
func (p memPoint) free() float64 { return p.runtime["heap_idle"] - p.runtime["heap_released"] }

// goal is the heap's goal: where the runtime collects next.
func (p memPoint) goal() float64 { return p.runtime["next_gc"] }

// outside is the resident memory outside the heap: the anonymous RSS less
// the heap in use and the heap held free.
func (p memPoint) outside() float64 { return p.anon - p.runtime["heap_inuse"] - p.free() }

// memSeries are the samples of each role's process, by PID.
type memSeries map[string]map[int][]memPoint

// sampleMemory reads every running process's anonymous RSS, and its Go
// runtime's accounts just before. A process that ended meanwhile, or
// whose metrics did not answer (it is stopping or starting), is skipped: a
// fault restarted it.
func (s *soakLab) sampleMemory() {
	if s.mem == nil {
		s.mem = memSeries{}
	}
	at := time.Since(s.start)
	add := func(who string, pid int, metrics func() (string, error)) {
		body, err := metrics()
		if err != nil {
			return
		}
		accounts, err := runtimeAccounts(body)
		if err != nil {
			s.fails.errorf(s.t, "%s: %v", who, err)
			return
		}
		st, err := lab.ReadProcStats(pid)
		if err != nil {
			return
		}
		if s.mem[who] == nil {
			s.mem[who] = map[int][]memPoint{}
		}
		s.mem[who][pid] = append(s.mem[who][pid], memPoint{at, float64(st.RSSAnon), accounts})
	}
	ok := func(status int, body string, err error) (string, error) {
		if err == nil && status != 200 {
			err = fmt.Errorf("status %d", status)
		}
		return body, err
	}
	for i, inst := range s.lbs {
		add(lab.LBName(i), inst.Proc.PID, func() (string, error) { return ok(inst.Get("/metrics")) })
	}
	for i, p := range s.sidecars {
		who := lab.TargetName(i)
		add(who, p.PID, func() (string, error) { return ok(e2e.GetIn(s.lab, who, sidecarAddr, "/metrics")) })
	}
	for i, p := range s.ctls {
		add(fmt.Sprintf("controller-%c", 'a'+i), p.cmd.Process.Pid, func() (string, error) { return ok(p.get("/metrics")) })
	}
	s.memAt = time.Now()
}

// checkMemory fails the test for each process that lived through the soak
// (the same PID and role at the end as after warm-up) whose heap goal or
// resident memory outside the heap at the end differs from its first
// sample of the second half by more than soakTolerance (or soakMemFloor),
// and logs every such process's series, with its anonymous RSS and the
// runtime's accounts. Not under the race detector: its shadow memory is
// most of the RSS.
func (s *soakLab) checkMemory(base, now sample) {
	var lines []string
	for _, who := range slices.Sorted(maps.Keys(base.pids)) {
		pid := base.pids[who]
		pts := s.mem[who][pid]
		if !livedThrough(base, now, who) || len(pts) < 2 {
			continue
		}
		end := pts[len(pts)-1]
		half := pts[slices.IndexFunc(pts, func(p memPoint) bool { return p.at >= end.at/2 })]
		series := func(name string, f func(memPoint) float64) {
			var vs []string
			for _, p := range pts {
				vs = append(vs, fmt.Sprintf("%.1f", f(p)/(1<<20)))
			}
			lines = append(lines, fmt.Sprintf("%-14s %-12s %s", who, name+":", strings.Join(vs, " ")))
		}
		series("anon", func(p memPoint) float64 { return p.anon })
		series("heap goal", memPoint.goal)
		series("outside", memPoint.outside)
		for _, part := range runtimeParts {
			series(part, func(p memPoint) float64 { return p.runtime[part] })
		}
		if raceEnabled {
			continue
		}
		for _, m := range []struct {
			what string
			f    func(memPoint) float64
		}{
			{"heap goal (go_memstats_next_gc_bytes)", memPoint.goal},
			{"resident memory outside the heap (anonymous RSS less the heap in use and held free)", memPoint.outside},
		} {
			h, e := m.f(half), m.f(end)
			if d := e - h; d > max(soakTolerance*h, soakMemFloor) || -d > max(soakTolerance*h, soakMemFloor) {
				s.fails.errorf(s.t, "%s: its %s went from %.1f MiB at %v to %.1f MiB at %v, more than %.0f%%",
					who, m.what, h/(1<<20), half.at.Round(time.Second), e/(1<<20), end.at.Round(time.Second), soakTolerance*100)
			}
		}
	}
	s.t.Logf("memory of the processes that lived through the soak, MiB every %v (race detector %v):\n  %s",
		soakMemEvery, raceEnabled, strings.Join(lines, "\n  "))
}

// soakMemFloor: memory may move this much whatever its size (a small
// process's heap goal moves by whole spans).
const soakMemFloor = 1 << 20
