package lab

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestNewMemCgroupRejectsPaths(t *testing.T) {
	for _, name := range []string{"", "a/b", "..", "x.y"} {
		if _, err := NewMemCgroup(name); err == nil {
			t.Errorf("%q accepted", name)
		}
	}
}

func TestCgroupWorkingSet(t *testing.T) {
	s := CgroupMemStats{Usage: 100, InactiveFile: 30}
	if got := s.WorkingSet(); got != 70 {
		t.Errorf("working set %d, want 70", got)
	}
	if got := (CgroupMemStats{Usage: 10, InactiveFile: 30}).WorkingSet(); got != 0 {
		t.Errorf("working set %d with more inactive file than usage, want 0", got)
	}
}

// TestIntegrationStartInCgroup starts a copy of sleep, dropped from the page
// cache first, in a memory cgroup inside a lab node: the process is in the
// cgroup, which is charged for the copy's pages it read, and is removed by
// Close.
func TestIntegrationStartInCgroup(t *testing.T) {
	l := newTestLab(t, Options{Targets: 1, NoResponders: true})
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "sleep-copy")
	if err := CopyUncached(sleep, bin); err != nil {
		t.Fatal(err)
	}
	cg, err := NewMemCgroup("sllbrd-lab-" + l.RunID())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cg.Close(); err != nil {
			t.Error(err)
		}
	})
	p, err := l.StartInCgroup(LBName(1), "sleeper", cg, bin, "30")
	if err != nil {
		t.Fatal(err)
	}
	procs, err := os.ReadFile(cg.ProcsFile())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Fields(string(procs)), strconv.Itoa(p.PID)) {
		t.Errorf("PID %d not in the cgroup's processes %q", p.PID, procs)
	}
	// The kernel folds its per-CPU counters into memory.stat every few
	// seconds.
	var s CgroupMemStats
	for deadline := time.Now().Add(10 * time.Second); s.File == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if s, err = cg.Stats(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%+v, working set %d", s, s.WorkingSet())
	if s.File == 0 || s.Usage < s.File || s.WorkingSet() > s.Usage {
		t.Errorf("implausible accounting %+v: want the copy's pages charged", s)
	}
	limitFile := map[bool]string{false: "memory.limit_in_bytes", true: "memory.max"}[cg.v2]
	if err := cg.SetLimit(64 << 20); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(cg.dir, limitFile)); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(64<<20) {
		t.Errorf("%s = %q, %v after SetLimit(64 MiB)", limitFile, b, err)
	}
	if n, err := cg.OOMKills(); err != nil || n != 0 {
		t.Errorf("OOMKills = %d, %v; want 0 for a sleeping process under 64 MiB", n, err)
	}
	if err := cg.RemoveLimit(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(cg.dir, limitFile)); err != nil || strings.TrimSpace(string(b)) == strconv.Itoa(64<<20) {
		t.Errorf("%s = %q, %v after RemoveLimit", limitFile, b, err)
	}
	if err := p.Stop(); err != nil {
		t.Logf("stop: %v", err) // killed by a signal: expected
	}
	if err := cg.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cg.dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after Close: %v", cg.dir, err)
	}
}
