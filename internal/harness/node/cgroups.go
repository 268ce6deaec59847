package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sllbrd/sllbrd/internal/mountinfo"
)

// cgroupMounts returns the mount points of the cgroup hierarchies (v1 and
// v2).
func cgroupMounts() ([]string, error) {
	table, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	var out []string
	for _, m := range mountinfo.Parse(table) {
		if m.FSType == "cgroup" || m.FSType == "cgroup2" {
			out = append(out, m.Point)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("cgroups: no cgroup hierarchy is mounted")
	}
	return out, nil
}

// makeCgroupParent creates the kubelet's cgroup root in every hierarchy
// (the kubelet refuses a --cgroup-root that does not exist).
func makeCgroupParent() error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if err := os.MkdirAll(filepath.Join(m, cgroupParent), 0o755); err != nil {
			return fmt.Errorf("cgroups: %w", err)
		}
	}
	return nil
}

// removeCgroupParent kills every process left in the kubelet's cgroup root
// (containers whose runtime is gone) and removes its cgroups, deepest
// first. It gives up after 20 s of processes that do not die.
func removeCgroupParent() error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		pids, dirs := cgroupContents(mounts)
		if len(pids) == 0 {
			return removeDirs(dirs)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroups: processes %v do not die", pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL) // ESRCH: gone meanwhile
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cgroupContents lists the processes and the cgroup directories under
// cgroupParent in every hierarchy, directories deepest first.
func cgroupContents(mounts []string) ([]int, []string) {
	var pids []int
	var dirs []string
	for _, m := range mounts {
		root := filepath.Join(m, cgroupParent)
		_ = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return nil // gone meanwhile, or a control file
			}
			dirs = append(dirs, path)
			b, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
			if err != nil {
				return nil
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 && !slices.Contains(pids, pid) {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return pids, dirs
}

func removeDirs(dirs []string) error {
	var errs []error
	for _, d := range dirs {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("cgroups: rmdir %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
