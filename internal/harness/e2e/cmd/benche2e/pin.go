package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// CPU placement of the pinned setups (machines with two CPUs or more): the
// client's one sender (this process) runs on clientCPU and sllbrd on lbCPU,
// as NFQLB was measured ("the LB process on its own core").
const (
	clientCPU = 0
	lbCPU     = 1
)

// pinProcess restricts every thread of process pid to cpus (none: all of
// them); threads it starts later inherit the restriction.
func pinProcess(pid int, cpus ...int) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return fmt.Errorf("pin %d to CPUs %v: %w", pid, cpus, err)
	}
	var set unix.CPUSet
	if len(cpus) == 0 {
		for c := range runtime.NumCPU() {
			set.Set(c)
		}
	}
	for _, c := range cpus {
		set.Set(c)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		// A thread that exited meanwhile (ESRCH) needs no pinning.
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("pin thread %d of %d to CPUs %v: %w", tid, pid, cpus, err)
		}
	}
	return nil
}
