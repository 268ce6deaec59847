package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The processes' heaps: RSS follows the Go heap's goal, up to twice the
// live heap, so a leak shows first, and for sure, in the live heap after a
// collection. Every SLLBR and every target's sidecar serves pprof on
// soakPprof in its own namespace, every controller replica on a port of
// its own on the host (controllerProc.pprof).

// soakPprof is every SLLBR's and sidecar's --pprof-address (a sidecar's
// beside its sidecarAddr).
const soakPprof = "127.0.0.1:6060"

// pprofGet fetches a path of one process's pprof.
type pprofGet func(path string) (status int, body string, err error)

// heapResources makes process pid, playing who, collect its garbage,
// records the heap still allocated after it (HeapAlloc) as
// who/heap_live_bytes, and keeps the heap profile for a failure's logs,
// named after who and pid. It runs before the RSS is read, so that both
// follow the same collection.
func (s *soakLab) heapResources(r sample, who string, pid int, get pprofGet) {
	status, body, err := get("/debug/pprof/heap?gc=1&debug=1")
	if err == nil && status != 200 {
		err = fmt.Errorf("status %d: %.200q", status, body)
	}
	if err != nil {
		s.fails.fatalf(s.t, "%s heap profile: %v", who, err)
	}
	live, err := heapAlloc(body)
	if err != nil {
		s.fails.fatalf(s.t, "%s heap profile: %v", who, err)
	}
	r.r[who+"/heap_live_bytes"] = live
	if status, prof, err := get("/debug/pprof/heap"); err == nil && status == 200 {
		s.heaps = append(s.heaps, heapProfile{fmt.Sprintf("%s-%d-%d", who, pid, len(s.heaps)), prof})
	}
}

// heapAlloc reads "# HeapAlloc = N" from a text heap profile (debug=1),
// the runtime's MemStats at the time of the profile.
func heapAlloc(profile string) (float64, error) {
	for line := range strings.SplitSeq(profile, "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("no HeapAlloc in %d bytes", len(profile))
}

// heapProfile is one heap profile (pprof's protobuf) of a process, named
// role-PID-index.
type heapProfile struct {
	name, data string
}

// keepHeaps writes the heap profiles into dir, for `go tool pprof -base`.
func (s *soakLab) keepHeaps(dir string) {
	for _, h := range s.heaps {
		_ = os.WriteFile(filepath.Join(dir, "heap-"+h.name+".pb.gz"), []byte(h.data), 0o644)
	}
}
