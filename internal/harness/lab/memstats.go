package lab

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MemStats is a process's memory as the kernel counts it, in bytes.
type MemStats struct {
	RSS, Anon, File, Shmem uint64 // /proc/PID/status VmRSS, RssAnon, RssFile, RssShmem
	HWM                    uint64 // VmHWM: the peak RSS
	PSS, PSSAnon, PSSFile  uint64 // /proc/PID/smaps_rollup (0 when the kernel lacks it)
}

// ReadMemStats reads /proc/PID/status and /proc/PID/smaps_rollup.
func ReadMemStats(pid int) (MemStats, error) {
	var m MemStats
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, fmt.Errorf("memory of %d: %w", pid, err)
	}
	fields := map[string]*uint64{"VmRSS": &m.RSS, "RssAnon": &m.Anon, "RssFile": &m.File, "RssShmem": &m.Shmem, "VmHWM": &m.HWM}
	if err := parseKB(string(status), fields); err != nil {
		return m, fmt.Errorf("memory of %d: status: %w", pid, err)
	}
	if m.RSS == 0 {
		return m, fmt.Errorf("memory of %d: status has no VmRSS", pid)
	}
	if rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid)); err == nil {
		if err := parseKB(string(rollup), map[string]*uint64{"Pss": &m.PSS, "Pss_Anon": &m.PSSAnon, "Pss_File": &m.PSSFile}); err != nil {
			return m, fmt.Errorf("memory of %d: smaps_rollup: %w", pid, err)
		}
	}
	return m, nil
}

// parseKB sets each field named in into from lines "Name: N kB".
func parseKB(text string, into map[string]*uint64) error {
	for line := range strings.SplitSeq(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		dst := into[k]
		if !ok || dst == nil {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return fmt.Errorf("%s: %q is not a size in kB", k, v)
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		*dst = kb * 1024
	}
	return nil
}
