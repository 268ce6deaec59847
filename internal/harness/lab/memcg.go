package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Memory cgroup roots: the unified hierarchy (cgroup v2) when it has the
// memory controller, else the v1 memory hierarchy.
const (
	cgroupV2Root = "/sys/fs/cgroup"
	cgroupV1Root = "/sys/fs/cgroup/memory"
)

// MemCgroup is a memory cgroup the lab created for the processes started in
// it (StartInCgroup), so that their memory can be read the way the kubelet
// reads a container's: everything charged to the cgroup, page cache and
// kernel memory included. Close removes it.
type MemCgroup struct {
	dir string
	v2  bool
}

// CgroupMemStats is a memory cgroup's accounting, in bytes.
type CgroupMemStats struct {
	Usage        uint64 // all memory charged: v1 memory.usage_in_bytes, v2 memory.current
	Anon         uint64 // anonymous memory (v1 total_rss, v2 anon)
	File         uint64 // page cache (v1 total_cache, v2 file)
	ActiveFile   uint64
	InactiveFile uint64
	Kernel       uint64 // kernel memory charged (v1 memory.kmem.usage_in_bytes, v2 kernel)
}

// WorkingSet is what the kubelet reports as the container's memory
// (container_memory_working_set_bytes, `kubectl top`): the usage minus the
// inactive page cache, which the kernel reclaims first.
func (s CgroupMemStats) WorkingSet() uint64 {
	if s.InactiveFile > s.Usage {
		return 0
	}
	return s.Usage - s.InactiveFile
}

// NewMemCgroup creates the memory cgroup name (v2 when the unified
// hierarchy has the memory controller, else v1). It fails when neither is
// writable, or when name exists already.
func NewMemCgroup(name string) (*MemCgroup, error) {
	if name == "" || strings.ContainsAny(name, "/.") {
		return nil, fmt.Errorf("memory cgroup %q: not a plain name", name)
	}
	c := &MemCgroup{dir: filepath.Join(cgroupV1Root, name)}
	if controllers, err := os.ReadFile(filepath.Join(cgroupV2Root, "cgroup.subtree_control")); err == nil &&
		strings.Contains(" "+strings.TrimSpace(string(controllers))+" ", " memory ") {
		c = &MemCgroup{dir: filepath.Join(cgroupV2Root, name), v2: true}
	}
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		return nil, fmt.Errorf("memory cgroup: %w", err)
	}
	return c, nil
}

// ProcsFile is the file a process writes its PID to, to join the cgroup.
func (c *MemCgroup) ProcsFile() string { return filepath.Join(c.dir, "cgroup.procs") }

// Stats reads the cgroup's accounting.
func (c *MemCgroup) Stats() (CgroupMemStats, error) {
	var s CgroupMemStats
	stat, err := os.ReadFile(filepath.Join(c.dir, "memory.stat"))
	if err != nil {
		return s, fmt.Errorf("memory cgroup: %w", err)
	}
	fields := map[string]*uint64{"total_rss": &s.Anon, "total_cache": &s.File,
		"total_active_file": &s.ActiveFile, "total_inactive_file": &s.InactiveFile}
	usageFile, kernelFile := "memory.usage_in_bytes", "memory.kmem.usage_in_bytes"
	if c.v2 {
		fields = map[string]*uint64{"anon": &s.Anon, "file": &s.File, "active_file": &s.ActiveFile,
			"inactive_file": &s.InactiveFile, "kernel": &s.Kernel}
		usageFile, kernelFile = "memory.current", ""
	}
	for line := range strings.SplitSeq(string(stat), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if p := fields[k]; ok && p != nil {
			if *p, err = strconv.ParseUint(v, 10, 64); err != nil {
				return s, fmt.Errorf("memory cgroup: memory.stat %q: %w", line, err)
			}
		}
	}
	if s.Usage, err = readUint(filepath.Join(c.dir, usageFile)); err != nil {
		return s, err
	}
	if kernelFile != "" {
		if s.Kernel, err = readUint(filepath.Join(c.dir, kernelFile)); err != nil {
			return s, err
		}
	}
	return s, nil
}

// SetLimit sets the most memory the cgroup may be charged (v1
// memory.limit_in_bytes, v2 memory.max), as a container's memory limit
// does: above it the kernel reclaims the cgroup's page cache, and kills a
// process when nothing is left to reclaim. Lowering it below the usage
// reclaims first; it fails when the kernel cannot get under it.
func (c *MemCgroup) SetLimit(bytes uint64) error {
	file := "memory.limit_in_bytes"
	if c.v2 {
		file = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(c.dir, file), []byte(strconv.FormatUint(bytes, 10)), 0); err != nil {
		return fmt.Errorf("memory cgroup: limit %d: %w", bytes, err)
	}
	return nil
}

// RemoveLimit lifts the limit SetLimit set.
func (c *MemCgroup) RemoveLimit() error {
	file, unlimited := "memory.limit_in_bytes", "-1"
	if c.v2 {
		file, unlimited = "memory.max", "max"
	}
	if err := os.WriteFile(filepath.Join(c.dir, file), []byte(unlimited), 0); err != nil {
		return fmt.Errorf("memory cgroup: remove limit: %w", err)
	}
	return nil
}

// OOMKills is how many processes of the cgroup the kernel's OOM killer
// has killed (v1 memory.oom_control, v2 memory.events: oom_kill).
func (c *MemCgroup) OOMKills() (uint64, error) {
	file := "memory.oom_control"
	if c.v2 {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(c.dir, file))
	if err != nil {
		return 0, fmt.Errorf("memory cgroup: %w", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("memory cgroup: %s: %q: %w", file, line, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("memory cgroup: %s has no oom_kill count", file)
}

// Close removes the cgroup, waiting up to 5 s for its processes to be gone.
func (c *MemCgroup) Close() error {
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err = unix.Rmdir(c.dir); err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("memory cgroup: remove %s: %w", c.dir, err)
		}
	}
}

// waitMember waits up to timeout for pid to be among the cgroup's processes.
func (c *MemCgroup) waitMember(pid int, timeout time.Duration) error {
	want := strconv.Itoa(pid)
	for deadline := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		procs, err := os.ReadFile(c.ProcsFile())
		if err != nil {
			return fmt.Errorf("memory cgroup: %w", err)
		}
		if slices.Contains(strings.Fields(string(procs)), want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("memory cgroup %s: process %d did not join within %v", c.dir, pid, timeout)
		}
	}
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("memory cgroup: %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("memory cgroup: %s: %w", path, err)
	}
	return v, nil
}

// DropPageCache writes path's dirty pages back and drops the file from the
// page cache, so that the next process reading it is charged for the pages
// it reads, as a container is for its image's files on a node that has not
// run the image yet. Pages mapped by a running process stay.
func DropPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("drop page cache: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("drop page cache: %s: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("drop page cache: %s: %w", path, err)
	}
	return nil
}
