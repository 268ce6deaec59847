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

// file is the path of the control file named v1 in cgroup v1 and v2 in v2.
func (c *MemCgroup) file(v1, v2 string) string {
	if c.v2 {
		return filepath.Join(c.dir, v2)
	}
	return filepath.Join(c.dir, v1)
}

// Stats reads the cgroup's accounting.
func (c *MemCgroup) Stats() (CgroupMemStats, error) {
	var s CgroupMemStats
	fields := map[string]*uint64{"total_rss": &s.Anon, "total_cache": &s.File,
		"total_active_file": &s.ActiveFile, "total_inactive_file": &s.InactiveFile}
	if c.v2 {
		fields = map[string]*uint64{"anon": &s.Anon, "file": &s.File, "active_file": &s.ActiveFile,
			"inactive_file": &s.InactiveFile, "kernel": &s.Kernel}
	}
	if _, err := readCounters(filepath.Join(c.dir, "memory.stat"), fields); err != nil {
		return s, err
	}
	var err error
	if s.Usage, err = readUint(c.file("memory.usage_in_bytes", "memory.current")); err != nil {
		return s, err
	}
	if !c.v2 { // v2 counts it in memory.stat
		if s.Kernel, err = readUint(filepath.Join(c.dir, "memory.kmem.usage_in_bytes")); err != nil {
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
func (c *MemCgroup) SetLimit(bytes uint64) error { return c.writeLimit(strconv.FormatUint(bytes, 10)) }

// RemoveLimit lifts the limit SetLimit set.
func (c *MemCgroup) RemoveLimit() error {
	if c.v2 {
		return c.writeLimit("max")
	}
	return c.writeLimit("-1")
}

func (c *MemCgroup) writeLimit(limit string) error {
	if err := os.WriteFile(c.file("memory.limit_in_bytes", "memory.max"), []byte(limit), 0); err != nil {
		return fmt.Errorf("memory cgroup: limit %s: %w", limit, err)
	}
	return nil
}

// OOMKills is how many processes of the cgroup the kernel's OOM killer
// has killed (v1 memory.oom_control, v2 memory.events: oom_kill).
func (c *MemCgroup) OOMKills() (uint64, error) {
	var kills uint64
	file := c.file("memory.oom_control", "memory.events")
	if found, err := readCounters(file, map[string]*uint64{"oom_kill": &kills}); err != nil || found == 0 {
		return 0, errors.Join(err, fmt.Errorf("memory cgroup: %s has no oom_kill count", file))
	}
	return kills, nil
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

// readCounters sets each counter named in into from the file's "name
// value" lines, and returns how many it found.
func readCounters(path string, into map[string]*uint64) (found int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("memory cgroup: %w", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if p := into[k]; ok && p != nil {
			if *p, err = strconv.ParseUint(strings.TrimSpace(v), 10, 64); err != nil {
				return found, fmt.Errorf("memory cgroup: %s: %q: %w", path, line, err)
			}
			found++
		}
	}
	return found, nil
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

// CopyUncached copies the file src to dst (mode 0755) and drops the copy
// from the page cache (DropPageCache): a program started from dst reads it
// from disk, charged to its memory cgroup, whatever ran src before.
func CopyUncached(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("copy uncached: %w", err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		return fmt.Errorf("copy uncached: %w", err)
	}
	return DropPageCache(dst)
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
