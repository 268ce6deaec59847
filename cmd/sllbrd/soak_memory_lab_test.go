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

// The processes' own memory over the soak. A Go process's anonymous RSS
// holds, besides what it uses, the heap its runtime keeps free for reuse:
// up to the heap's goal (twice the live heap by default) and a tenth more,
// filled and emptied as the process allocates and collects, so its RSS
// moves by up to half whatever the time it is read. What a process uses is
// its anonymous RSS less that free heap (HeapIdle - HeapReleased, read from
// its /metrics just before the RSS); that grows after start-up as caches
// and pools fill, and then holds, while a leak goes on growing. So memory
// has its own warm-up, the soak's first half: each process that lives
// through the soak must end within soakTolerance of its memory in use at
// half-time. The live heap of the SLLBRs, the sidecars and the controller
// replicas, the leak itself, is held to its value after the first warm-up
// (checkResources).

// soakMemEvery is how often the memory is sampled during the soak.
const soakMemEvery = 30 * time.Second

// memPoint is one process's memory at one time.
type memPoint struct {
	at   time.Duration // since the soak's start
	anon float64       // anonymous RSS, bytes
	free float64       // of it, the heap the Go runtime holds free, bytes
}

// inUse is the process's own memory less what its runtime holds free.
func (p memPoint) inUse() float64 { return p.anon - p.free }

// memSeries are the samples of each role's process, by PID.
type memSeries map[string]map[int][]memPoint

// runtimeFree returns the heap a Go process's runtime holds free and has
// not returned to the system (go_memstats_heap_idle_bytes less
// go_memstats_heap_released_bytes), from its /metrics.
func runtimeFree(metrics string) (float64, error) {
	var idle, released float64
	var found int
	for line := range strings.SplitSeq(metrics, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		var dst *float64
		switch f[0] {
		case "go_memstats_heap_idle_bytes":
			dst = &idle
		case "go_memstats_heap_released_bytes":
			dst = &released
		default:
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", f[0], err)
		}
		*dst = v
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("no go_memstats_heap_idle_bytes and go_memstats_heap_released_bytes in %d bytes of metrics", len(metrics))
	}
	return idle - released, nil
}

// sampleMemory reads every running process's anonymous RSS, and the free
// heap its runtime holds just before. A process that ended meanwhile, or
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
		free, err := runtimeFree(body)
		if err != nil {
			s.t.Errorf("%s: %v", who, err)
			return
		}
		st, err := lab.ReadProcStats(pid)
		if err != nil {
			return
		}
		if s.mem[who] == nil {
			s.mem[who] = map[int][]memPoint{}
		}
		s.mem[who][pid] = append(s.mem[who][pid], memPoint{at, float64(st.RSSAnon), free})
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
// (the same PID and role at the end as after warm-up) whose memory in use
// at the end differs from its first sample of the second half by more
// than soakTolerance (or soakMemFloor), and logs every such process's
// series, with its anonymous RSS. Not under the race detector: its shadow
// memory is most of it.
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
		var used, anon []string
		for _, p := range pts {
			used = append(used, fmt.Sprintf("%.1f", p.inUse()/(1<<20)))
			anon = append(anon, fmt.Sprintf("%.1f", p.anon/(1<<20)))
		}
		lines = append(lines, fmt.Sprintf("%-14s in use: %s", who, strings.Join(used, " ")),
			fmt.Sprintf("%-14s anon:   %s", "", strings.Join(anon, " ")))
		if raceEnabled {
			continue
		}
		tol := max(soakTolerance*half.inUse(), soakMemFloor)
		if d := end.inUse() - half.inUse(); d > tol || -d > tol {
			s.t.Errorf("%s: its memory in use (anonymous RSS less the heap its runtime holds free) went from %.1f MiB at %v to %.1f MiB at %v, more than %.0f%%",
				who, half.inUse()/(1<<20), half.at.Round(time.Second), end.inUse()/(1<<20), end.at.Round(time.Second), soakTolerance*100)
		}
	}
	s.t.Logf("memory of the processes that lived through the soak, MiB every %v (race detector %v):\n  %s",
		soakMemEvery, raceEnabled, strings.Join(lines, "\n  "))
}

// soakMemFloor: memory may move this much whatever its size (a small
// process's heap goal moves by whole spans).
const soakMemFloor = 1 << 20
