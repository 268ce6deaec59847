package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// The soak's logs: a failed run keeps every process's log, restarted ones
// included, for the faults it names to be read against.

// keepLog moves p's log aside (suffixed with its PID) before its process
// is started again under the same name, which would truncate it.
func keepLog(p *lab.Process) {
	_ = os.Rename(p.LogPath, fmt.Sprintf("%s.%d", p.LogPath, p.PID))
}

// keepLogsOnFailure copies the logs of the lab's processes and of the
// controllers to a directory that outlives the test, when it failed.
func (s *soakLab) keepLogsOnFailure() {
	if !s.t.Failed() {
		return
	}
	dir, err := os.MkdirTemp("", "sllbrd-soak-logs-")
	if err != nil {
		s.t.Logf("keep logs: %v", err)
		return
	}
	logs, _ := filepath.Glob(filepath.Join(s.lab.TempDir(), "*.log*"))
	for _, p := range s.ctlLogs {
		logs = append(logs, p)
	}
	for _, src := range logs {
		b, err := os.ReadFile(src)
		if err != nil {
			continue
		}
		name := filepath.Base(src)
		if !strings.Contains(src, s.lab.TempDir()) {
			name = "controller-" + filepath.Base(filepath.Dir(src)) + "-" + name
		}
		_ = os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	for _, node := range append(s.lab.LBs(), s.lab.Targets()...) { // the kernel state at the failure
		var b strings.Builder
		for _, cmd := range [][]string{{"ip", "-4", "rule"}, {"ip", "-6", "rule"}, {"ip", "-4", "route", "show", "table", "all"},
			{"ip", "-6", "route", "show", "table", "all"}, {"ip", "addr"}, {"nft", "list", "ruleset"}} {
			out, err := s.lab.Exec(context.Background(), node, cmd...)
			fmt.Fprintf(&b, "# %s (%v)\n%s\n", strings.Join(cmd, " "), err, out)
		}
		_ = os.WriteFile(filepath.Join(dir, node+"-kernel.txt"), []byte(b.String()), 0o644)
	}
	s.keepHeaps(dir)
	s.t.Logf("the soak's process logs, kernel state and heap profiles are kept in %s", dir)
}
