package main

import (
	"strings"
	"testing"
	"testing/fstest"
)

// noCgroup is a host without cgroup files.
var noCgroup = fstest.MapFS{}

// cgroupHost is a host with a cgroup2 mount at /sys/fs/cgroup, the process
// in /kubepods/pod1/ctr, and cpu.max files as given (path -> content).
func cgroupHost(cpuMax map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{
		"proc/self/cgroup": {Data: []byte("0::/kubepods/pod1/ctr\n")},
		"proc/self/mountinfo": {Data: []byte(
			"22 26 0:21 / /sys rw,relatime - sysfs sysfs rw\n" +
				"30 22 0:27 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n")},
	}
	for p, v := range cpuMax {
		fsys[p] = &fstest.MapFile{Data: []byte(v)}
	}
	return fsys
}

func TestDefaultQueuesHonoursTheCPULimit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		affinity int
		fsys     fstest.MapFS
		want     int
		rule     string
	}{
		{"no cgroup: affinity", 8, noCgroup, 8, "affinity): 8; no cgroup v2 CPU limit"},
		{"limit 1.5 CPUs rounds up to 2", 8,
			cgroupHost(map[string]string{"sys/fs/cgroup/kubepods/pod1/ctr/cpu.max": "150000 100000\n"}), 2,
			`CPU limit of the container: /sys/fs/cgroup/kubepods/pod1/ctr/cpu.max "150000 100000", rounded up: 2`},
		{"limit 0.5 CPU is one queue", 8,
			cgroupHost(map[string]string{"sys/fs/cgroup/kubepods/pod1/ctr/cpu.max": "50000 100000\n"}), 1, "rounded up: 1"},
		{"a parent's limit binds", 8, cgroupHost(map[string]string{
			"sys/fs/cgroup/kubepods/pod1/ctr/cpu.max": "max 100000\n",
			"sys/fs/cgroup/kubepods/pod1/cpu.max":     "300000 100000\n",
			"sys/fs/cgroup/kubepods/cpu.max":          "1200000 100000\n",
		}), 3, "kubepods/pod1/cpu.max"},
		{"limit above the affinity", 4,
			cgroupHost(map[string]string{"sys/fs/cgroup/kubepods/pod1/ctr/cpu.max": "600000 100000\n"}), 4,
			"affinity): 4; CPU limit"},
		{"no limit", 4, cgroupHost(map[string]string{"sys/fs/cgroup/kubepods/pod1/ctr/cpu.max": "max 100000\n"}), 4,
			"no cgroup v2 CPU limit"},
		{"big node with a limit of 100 CPUs", 128,
			cgroupHost(map[string]string{"sys/fs/cgroup/kubepods/pod1/ctr/cpu.max": "10000000 100000\n"}), 64,
			"the maximum, 64 (CPU limit of the container"},
		{"unreadable cpu.max: affinity, and why", 8,
			cgroupHost(map[string]string{"sys/fs/cgroup/kubepods/pod1/ctr/cpu.max": "lots\n"}), 8,
			"cgroup CPU limit unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, rule := defaultQueues(tc.affinity, tc.fsys)
			if n != tc.want || !strings.Contains(rule, tc.rule) {
				t.Errorf("defaultQueues = %d, %q; want %d, a rule containing %q", n, rule, tc.want, tc.rule)
			}
		})
	}
}

func TestCgroupDirUnderAMountOfASubtree(t *testing.T) {
	// The cgroup2 file system mounted from /kubepods (no cgroup namespace):
	// the process's cgroup is read below the mount point.
	fsys := fstest.MapFS{
		"proc/self/cgroup":                  {Data: []byte("12:cpu:/x\n0::/kubepods/pod1/ctr\n")},
		"proc/self/mountinfo":               {Data: []byte("30 22 0:27 /kubepods /sys/fs/cgroup\\040v2 rw - cgroup2 cgroup2 rw\n")},
		"sys/fs/cgroup v2/pod1/ctr/cpu.max": {Data: []byte("200000 100000")},
	}
	limit, where, err := cgroupCPULimit(fsys)
	if err != nil || limit != 2 || !strings.Contains(where, "/sys/fs/cgroup v2/pod1/ctr/cpu.max") {
		t.Errorf("cgroupCPULimit = %d, %q, %v; want 2 from /sys/fs/cgroup v2/pod1/ctr/cpu.max", limit, where, err)
	}
	// A cgroup outside the mounted subtree cannot be read: no limit.
	fsys["proc/self/cgroup"] = &fstest.MapFile{Data: []byte("0::/system.slice/x\n")}
	if limit, _, err := cgroupCPULimit(fsys); limit != 0 || err != nil {
		t.Errorf("cgroup outside the mount: %d, %v; want no limit", limit, err)
	}
}

func TestParseCPUMax(t *testing.T) {
	for in, want := range map[string]int{"max 100000": 0, "100000 100000\n": 1, "100001 100000": 2, "250000 50000": 5} {
		if got, err := parseCPUMax(in); err != nil || got != want {
			t.Errorf("parseCPUMax(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "max", "0 100000", "100000 0", "-1 100000", "1.5 1", "1 2 3"} {
		if _, err := parseCPUMax(in); err == nil {
			t.Errorf("parseCPUMax(%q) accepted", in)
		}
	}
}
