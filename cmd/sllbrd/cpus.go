package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/sllbrd/sllbrd/internal/mountinfo"
)

// maxQueues is the largest --queues: one nfqueue and one locked reader
// thread per queue.
const maxQueues = 64

// defaultQueues returns the --queues default, min(usable CPUs, maxQueues),
// and the rule that chose it, for the log. affinity is the number of CPUs
// the process may run on (runtime.NumCPU, which honours the affinity mask);
// root is the host's file system ("/"), where the cgroup v2 CPU limit is
// read from (see cgroupCPULimit).
func defaultQueues(affinity int, root fs.FS) (int, string) {
	n := max(affinity, 1)
	rule := fmt.Sprintf("CPUs this process may run on (affinity): %d", n)
	switch limit, where, err := cgroupCPULimit(root); {
	case err != nil:
		rule += fmt.Sprintf("; cgroup CPU limit unknown: %v", err)
	case limit > 0 && limit < n:
		n = limit
		rule = fmt.Sprintf("CPU limit of the container: %s, rounded up: %d (affinity allows %d)", where, limit, affinity)
	case limit > 0:
		rule += fmt.Sprintf("; CPU limit %s allows %d", where, limit)
	default:
		rule += "; no cgroup v2 CPU limit"
	}
	if n > maxQueues {
		rule = fmt.Sprintf("the maximum, %d (%s)", maxQueues, rule)
		n = maxQueues
	}
	return n, rule
}

// cgroupCPULimit returns the CPU limit of the process's cgroup v2, in whole
// CPUs rounded up: the smallest ceil(quota/period) of cpu.max in its cgroup
// and every ancestor below the cgroup2 mount (a parent's limit binds its
// children). It returns 0 when there is none: no cgroup v2 (or a v1-only
// host), or "max" everywhere. where names the cpu.max file and its value.
// Paths are read from root: proc/self/cgroup (the "0::PATH" line),
// proc/self/mountinfo (the cgroup2 mount) and the cgroup directories.
func cgroupCPULimit(root fs.FS) (limit int, where string, err error) {
	dir, mount, err := cgroupDir(root)
	if err != nil || dir == "" {
		return 0, "", err
	}
	for ; strings.HasPrefix(dir, mount) && dir != mount; dir = path.Dir(dir) {
		file := path.Join(dir, "cpu.max")
		b, err := fs.ReadFile(root, strings.TrimPrefix(file, "/"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // no cpu controller enabled at this level
		}
		if err != nil {
			return 0, "", fmt.Errorf("cgroup: %w", err)
		}
		n, err := parseCPUMax(string(b))
		if err != nil {
			return 0, "", fmt.Errorf("cgroup %s: %w", file, err)
		}
		if n > 0 && (limit == 0 || n < limit) {
			limit, where = n, fmt.Sprintf("%s %q", file, strings.TrimSpace(string(b)))
		}
	}
	return limit, where, nil
}

// parseCPUMax reads cgroup v2 cpu.max, "$MAX $PERIOD" (MAX is "max" or a
// quota in microseconds per PERIOD), as whole CPUs rounded up; 0 for "max".
func parseCPUMax(s string) (int, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, fmt.Errorf("cpu.max %q: want \"$MAX $PERIOD\"", strings.TrimSpace(s))
	}
	if f[0] == "max" {
		return 0, nil
	}
	quota, err1 := strconv.ParseUint(f[0], 10, 63)
	period, err2 := strconv.ParseUint(f[1], 10, 63)
	if err := errors.Join(err1, err2); err != nil || quota == 0 || period == 0 {
		return 0, fmt.Errorf("cpu.max %q: want positive integers: %w", strings.TrimSpace(s), err)
	}
	return int((quota + period - 1) / period), nil
}

// cgroupDir returns the absolute directory of the process's cgroup v2 and
// the cgroup2 mount point it lies under, or "" when there is none.
func cgroupDir(root fs.FS) (dir, mount string, err error) {
	cg, err := fs.ReadFile(root, "proc/self/cgroup")
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("cgroup: %w", err)
	}
	var cgPath string
	for line := range strings.Lines(string(cg)) {
		if p, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "0::"); ok {
			cgPath = p
		}
	}
	if cgPath == "" {
		return "", "", nil // cgroup v1 only
	}
	mi, err := fs.ReadFile(root, "proc/self/mountinfo")
	if err != nil {
		return "", "", fmt.Errorf("cgroup: %w", err)
	}
	mountRoot, mount := cgroup2Mount(mi)
	if mount == "" {
		return "", "", nil
	}
	// The mount shows the hierarchy from mountRoot on; a cgroup outside it
	// (another cgroup namespace) cannot be read.
	rel, ok := strings.CutPrefix(cgPath, strings.TrimSuffix(mountRoot, "/"))
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
		return "", "", nil
	}
	return path.Join(mount, rel), mount, nil
}

// cgroup2Mount returns the root and the mount point of the first cgroup2
// file system in /proc/self/mountinfo.
func cgroup2Mount(table []byte) (root, mount string) {
	for _, m := range mountinfo.Parse(table) {
		if m.FSType == "cgroup2" {
			return m.Root, m.Point
		}
	}
	return "", ""
}
