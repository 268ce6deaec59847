package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
)

// The SLLBRs' heaps: RSS follows the Go heap's goal, up to twice the live
// heap, so a leak shows first, and for sure, in the live heap after a
// collection. Each SLLBR serves pprof on soakPprof in its own namespace.

// soakPprof is every SLLBR's --pprof-address.
const soakPprof = "127.0.0.1:6060"

// heapResources makes lb's sllbrd collect its garbage, records the heap
// still allocated after it (HeapAlloc) as who/heap_live_bytes, and keeps
// the heap profile for a failure's logs. It runs before the RSS is read,
// so that both follow the same collection.
func (s *soakLab) heapResources(r sample, who string, inst *e2e.Instance) {
	_, body, err := inst.GetAt(soakPprof, "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		s.t.Fatalf("%s heap profile: %v", who, err)
	}
	live, err := heapAlloc(body)
	if err != nil {
		s.t.Fatalf("%s heap profile: %v", who, err)
	}
	r.r[who+"/heap_live_bytes"] = live
	if _, prof, err := inst.GetAt(soakPprof, "/debug/pprof/heap"); err == nil {
		s.heaps = append(s.heaps, heapProfile{fmt.Sprintf("%s-%d-%d", who, inst.Proc.PID, len(s.heaps)), prof})
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

// heapProfile is one heap profile (pprof's protobuf) of an SLLBR.
type heapProfile struct {
	name, data string
}

// keepHeaps writes the heap profiles into dir, for `go tool pprof -base`.
func (s *soakLab) keepHeaps(dir string) {
	for _, h := range s.heaps {
		_ = os.WriteFile(filepath.Join(dir, "heap-"+h.name+".pb.gz"), []byte(h.data), 0o644)
	}
}
