package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Runs returns the run ids of existing lab namespaces, with their node names.
func Runs() (map[string][]string, error) {
	all, err := ListNetns(NSPrefix)
	if err != nil {
		return nil, err
	}
	runs := map[string][]string{}
	for _, ns := range all {
		id, node, ok := strings.Cut(strings.TrimPrefix(ns, NSPrefix), "-")
		if ok && validRunID(id) {
			runs[id] = append(runs[id], node)
		}
	}
	for _, nodes := range runs {
		sort.Strings(nodes)
	}
	return runs, nil
}

// Remove tears down a run left behind (a detached labctl up, or a killed
// test): it kills the processes living in the run's namespaces by PID
// (SIGTERM, then SIGKILL after 2 s), deletes the namespaces by name and
// removes the run's temporary directories.
func Remove(ctx context.Context, runID string) error {
	if !validRunID(runID) {
		return fmt.Errorf("lab: bad run id %q", runID)
	}
	prefix := NSPrefix + runID + "-"
	names, err := ListNetns(prefix)
	if err != nil {
		return err
	}
	var errs []error
	var pids []int
	for _, ns := range names {
		p, err := netnsPIDs(ctx, ns)
		errs = append(errs, err)
		pids = append(pids, p...)
	}
	killPIDs(pids)
	for _, ns := range names {
		errs = append(errs, deleteNetns(ctx, ns))
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, d := range dirs {
		errs = append(errs, os.RemoveAll(d))
	}
	return errors.Join(errs...)
}

// killPIDs sends SIGTERM to each PID, waits up to 2 s for all to go, then
// sends SIGKILL to the survivors.
func killPIDs(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
