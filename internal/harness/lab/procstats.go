package lab

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcStats is a process's resource use as /proc reports it.
type ProcStats struct {
	User, System time.Duration // CPU time of all its threads so far
	RSS          uint64        // resident set size in bytes
	// RSSAnon is the part of RSS that is the process's own memory (heap,
	// stacks); the rest is mostly the binary's pages, shared by every
	// process running the same file.
	RSSAnon uint64
	Threads int
	// MajorFaults counts the page faults of all its threads so far that
	// had to read from disk: a process thrashing under a memory limit
	// re-reads its binary's pages.
	MajorFaults uint64
}

// CPU is the total CPU time (user + system).
func (s ProcStats) CPU() time.Duration { return s.User + s.System }

// clockTick is USER_HZ, 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// ReadProcStats reads /proc/PID/stat and /proc/PID/status.
func ReadProcStats(pid int) (ProcStats, error) {
	var s ProcStats
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, fmt.Errorf("proc stats: %w", err)
	}
	if s.User, s.System, s.MajorFaults, err = parseStat(stat); err != nil {
		return s, fmt.Errorf("proc stats of %d: %w", pid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, fmt.Errorf("proc stats: %w", err)
	}
	if s.RSS, s.Threads, err = parseStatus(status); err != nil {
		return s, fmt.Errorf("proc stats of %d: %w", pid, err)
	}
	s.RSSAnon = statusKB(status, "RssAnon")
	return s, nil
}

// parseStat returns majflt, utime and stime (fields 12, 14 and 15) of
// /proc/PID/stat. The command name (field 2) may contain spaces and
// parentheses, so fields are counted after its last ')'.
func parseStat(stat []byte) (user, system time.Duration, majorFaults uint64, err error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, 0, fmt.Errorf("stat: no command name")
	}
	f := strings.Fields(string(stat[i+1:])) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, 0, 0, fmt.Errorf("stat: %d fields after the name, want >= 13", len(f))
	}
	mf, err0 := strconv.ParseUint(f[9], 10, 64)
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err0 != nil || err1 != nil || err2 != nil {
		return 0, 0, 0, fmt.Errorf("stat: bad majflt/utime/stime %q %q %q", f[9], f[11], f[12])
	}
	return time.Duration(ut) * clockTick, time.Duration(st) * clockTick, mf, nil
}

// parseStatus returns VmRSS (bytes) and Threads of /proc/PID/status.
func parseStatus(status []byte) (rss uint64, threads int, err error) {
	var haveRSS, haveThreads bool
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		switch {
		case k == "VmRSS" && len(f) == 2 && f[1] == "kB":
			kb, perr := strconv.ParseUint(f[0], 10, 64)
			if perr != nil {
				return 0, 0, fmt.Errorf("status: VmRSS %q: %w", v, perr)
			}
			rss, haveRSS = kb*1024, true
		case k == "Threads" && len(f) == 1:
			n, perr := strconv.Atoi(f[0])
			if perr != nil {
				return 0, 0, fmt.Errorf("status: Threads %q: %w", v, perr)
			}
			threads, haveThreads = n, true
		}
	}
	if !haveRSS || !haveThreads {
		return 0, 0, fmt.Errorf("status: VmRSS or Threads missing (zombie?)")
	}
	return rss, threads, nil
}

// statusKB returns the value of a "KEY: N kB" line of /proc/PID/status in
// bytes, 0 when absent.
func statusKB(status []byte, key string) uint64 {
	for _, line := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			if f := strings.Fields(v); len(f) == 2 && f[1] == "kB" {
				kb, _ := strconv.ParseUint(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}
