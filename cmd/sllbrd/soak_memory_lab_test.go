package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// The processes' own memory over the soak. A Go process's anonymous RSS
// grows after start-up until its heap reaches its goal (twice the live
// heap by default) as it allocates, and then holds; a leak goes on
// growing. So memory has its own warm-up, the soak's first half: each
// process that lives through the soak must end within soakTolerance of
// its memory at half-time. The live heap of the SLLBRs, the sidecars and
// the controller replicas, the leak itself, is held to its value after
// the first warm-up (checkResources).

// soakMemEvery is how often the memory is sampled during the soak.
const soakMemEvery = 30 * time.Second

// memPoint is one process's memory at one time.
type memPoint struct {
	at   time.Duration // since the soak's start
	anon float64       // anonymous RSS, bytes
}

// memSeries are the samples of each role's process, by PID.
type memSeries map[string]map[int][]memPoint

// sampleMemory reads every running process's anonymous RSS. A process
// that ended meanwhile is skipped: a fault restarted it.
func (s *soakLab) sampleMemory() {
	if s.mem == nil {
		s.mem = memSeries{}
	}
	at := time.Since(s.start)
	add := func(who string, pid int) {
		st, err := lab.ReadProcStats(pid)
		if err != nil {
			return
		}
		if s.mem[who] == nil {
			s.mem[who] = map[int][]memPoint{}
		}
		s.mem[who][pid] = append(s.mem[who][pid], memPoint{at, float64(st.RSSAnon)})
	}
	for i, inst := range s.lbs {
		add(lab.LBName(i), inst.Proc.PID)
	}
	for i, p := range s.sidecars {
		add(lab.TargetName(i), p.PID)
	}
	for i, p := range s.ctls {
		add(fmt.Sprintf("controller-%c", 'a'+i), p.cmd.Process.Pid)
	}
	s.memAt = time.Now()
}

// checkMemory fails the test for each process that lived through the soak
// (the same PID and role at the end as after warm-up) whose anonymous RSS
// at the end differs from its first sample of the second half by more
// than soakTolerance (or soakMemFloor), and logs every such process's
// series. Not under the race detector: its shadow memory is most of it.
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
		var series []string
		for _, p := range pts {
			series = append(series, fmt.Sprintf("%.1f", p.anon/(1<<20)))
		}
		lines = append(lines, fmt.Sprintf("%-14s MiB every %v: %s", who, soakMemEvery, strings.Join(series, " ")))
		if raceEnabled {
			continue
		}
		if d := end.anon - half.anon; d > max(soakTolerance*half.anon, soakMemFloor) || -d > max(soakTolerance*half.anon, soakMemFloor) {
			s.t.Errorf("%s: its own memory (anonymous RSS) went from %.1f MiB at %v to %.1f MiB at %v, more than %.0f%%",
				who, half.anon/(1<<20), half.at.Round(time.Second), end.anon/(1<<20), end.at.Round(time.Second), soakTolerance*100)
		}
	}
	s.t.Logf("anonymous RSS of the processes that lived through the soak (race detector %v):\n  %s", raceEnabled, strings.Join(lines, "\n  "))
}

// soakMemFloor: memory may move this much whatever its size (a small
// process's heap goal moves by whole spans).
const soakMemFloor = 1 << 20
