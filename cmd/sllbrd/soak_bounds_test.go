package main

import (
	"testing"
	"time"
)

func TestSoakStreamBound(t *testing.T) {
	for _, c := range []struct{ loss, want time.Duration }{
		{0, soakStall},                // no outage: an exchange's own slack
		{soakProbeTimeout, soakStall}, // a loss window at the probes' resolution is no outage
		{soakProbeTimeout + time.Millisecond, soakRTO + soakStall},
		// A 2 s outage: sent again at 1, 3, 7, then 15 RTOs.
		{2*time.Second + soakProbeTimeout, 15*soakRTO + soakStall},
	} {
		if got := streamBound(c.loss); got != c.want {
			t.Errorf("streamBound(%v) = %v, want %v", c.loss, got, c.want)
		}
	}
}

func TestSoakHeapAlloc(t *testing.T) {
	got, err := heapAlloc("heap profile: 1: 2 [3: 4] @ heap/1048576\n\n# runtime.MemStats\n# Alloc = 11\n# HeapAlloc = 123456\n# Sys = 9\n")
	if err != nil || got != 123456 {
		t.Errorf("heapAlloc = %v, %v; want 123456", got, err)
	}
	if _, err := heapAlloc("# Alloc = 11\n"); err == nil {
		t.Error("heapAlloc without HeapAlloc: no error")
	}
}

func TestSoakRuntimeFree(t *testing.T) {
	body := "# HELP go_memstats_heap_idle_bytes x\n# TYPE go_memstats_heap_idle_bytes gauge\ngo_memstats_heap_idle_bytes 7.340032e+06\n" +
		"go_memstats_heap_inuse_bytes 9e+06\ngo_memstats_heap_released_bytes 2.097152e+06\ngo_memstats_next_gc_bytes 1.8e+07\ngo_goroutines 12\n"
	acc, err := runtimeAccounts(body)
	if got := (memPoint{runtime: acc}).free(); err != nil || got != 5<<20 {
		t.Errorf("free = %v, %v; want %v", got, err, 5<<20)
	}
	for _, bad := range []string{
		"go_memstats_heap_idle_bytes 7\ngo_memstats_heap_inuse_bytes 9\ngo_memstats_next_gc_bytes 18\n",
		"go_memstats_heap_released_bytes 7\ngo_memstats_heap_inuse_bytes 9\ngo_memstats_next_gc_bytes 18\n",
		"go_memstats_heap_idle_bytes x\ngo_memstats_heap_released_bytes 7\ngo_memstats_heap_inuse_bytes 9\ngo_memstats_next_gc_bytes 18\n",
	} {
		if _, err := runtimeAccounts(bad); err == nil {
			t.Errorf("runtimeAccounts(%q): no error", bad)
		}
	}
}

func TestSoakMemoryAccounts(t *testing.T) {
	p := memPoint{anon: 18 << 20, runtime: map[string]float64{"heap_inuse": 13 << 20, "heap_idle": 3 << 20, "heap_released": 1 << 20, "next_gc": 19 << 20}}
	if got := p.outside(); got != 3<<20 {
		t.Errorf("outside = %v, want %v", got, 3<<20)
	}
	if got := p.goal(); got != 19<<20 {
		t.Errorf("goal = %v, want %v", got, 19<<20)
	}
}

func TestSoakRuntimeAccounts(t *testing.T) {
	got, err := runtimeAccounts("go_memstats_heap_inuse_bytes 1.2e+07\ngo_memstats_stack_inuse_bytes 65536\ngo_memstats_frees_total 9\ngo_goroutines 3\n" +
		"go_memstats_heap_idle_bytes 0\ngo_memstats_heap_released_bytes 0\ngo_memstats_next_gc_bytes 0\n")
	if err != nil || len(got) != 5 || got["heap_inuse"] != 1.2e7 || got["stack_inuse"] != 65536 {
		t.Errorf("runtimeAccounts = %v, %v", got, err)
	}
}
