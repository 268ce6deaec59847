package liveness

import (
	"context"
	"flag"
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
)

var (
	restTargets = flag.Int("liveness.rest-targets", 5, "TestIntegrationRestCost: dual-stack targets probed (two addresses each)")
	restWindow  = flag.Duration("liveness.rest-window", 4*time.Second, "TestIntegrationRestCost: how long CPU and wake-ups are measured, each round and mode")
	restRounds  = flag.Int("liveness.rest-rounds", 1, "TestIntegrationRestCost: rounds of measurements, alone then grouped")
)

// restUsage is what getrusage says of the whole test process over a window.
type restUsage struct {
	cpu    time.Duration // user + system
	wakes  int64         // voluntary context switches: a thread slept and was woken
	forced int64         // involuntary ones: preempted while running
}

func rusage(t *testing.T) (unix.Rusage, time.Time) {
	t.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru, time.Now()
}

func usageBetween(a, b unix.Rusage) restUsage {
	return restUsage{
		cpu:    time.Duration(b.Utime.Nano() - a.Utime.Nano() + b.Stime.Nano() - a.Stime.Nano()),
		wakes:  b.Nvcsw - a.Nvcsw,
		forced: b.Nivcsw - a.Nivcsw,
	}
}

// restRun is one measurement of TestIntegrationRestCost.
type restRun struct {
	window time.Duration
	sent   uint64
	restUsage
}

func (r restRun) perSec(n float64) float64 { return n / r.window.Seconds() }

// TestIntegrationRestCost measures the prober at rest with a few endpoints
// (-liveness.rest-targets dual-stack targets, each in its own namespace on a
// bridge, at the default 200 ms × 4): the process's CPU (getrusage: it
// includes the kernel's work for the probes and the softirq work of the
// targets' replies) and its wake-ups (voluntary context switches of all its
// threads: the prober's and the Go runtime's) per second, over
// -liveness.rest-window, with the probes grouped (the default) and with
// every address probed alone at a phase of its own (as before grouping),
// alternately for -liveness.rest-rounds rounds, so that both see the same
// load of this shared machine. Nothing else runs in the test process
// meanwhile. It fails if any address changes, if the probe rate is not one
// per address per interval, or if grouping does not cut the wake-ups by
// a third at least (with 10 addresses they are about 5 times fewer).
func TestIntegrationRestCost(t *testing.T) {
	l := newProbeLab(t, *restTargets)
	cfg := Config{Interval: 200 * time.Millisecond, Multiplier: 4, HoldDown: 5 * time.Second}
	var addrs []netip.Addr
	for _, tg := range l.targets {
		addrs = append(addrs, tg.v4, tg.v6)
	}
	modes := []struct {
		name     string
		groupMax int
	}{{"alone", 1}, {"grouped", maxGroup}}
	total := make([]restRun, len(modes))
	for round := range *restRounds {
		for i, m := range modes {
			r := measureRest(t, l.p, cfg, addrs, m.groupMax)
			t.Logf("round %d, %s: %d addresses every %v for %v: %.1f probes/s, %.1f wake-ups/s (%.2f probes per wake-up), %.1f preemptions/s; CPU %.2f m (%.1f µs per probe and its reply)",
				round+1, m.name, len(addrs), cfg.Interval, r.window.Round(time.Millisecond), r.perSec(float64(r.sent)), r.perSec(float64(r.wakes)),
				float64(r.sent)/float64(max(r.wakes, 1)), r.perSec(float64(r.forced)),
				1000*float64(r.cpu)/float64(r.window), float64(r.cpu/time.Microsecond)/float64(max(r.sent, 1)))
			total[i].window += r.window
			total[i].sent += r.sent
			total[i].cpu += r.cpu
			total[i].wakes += r.wakes
			total[i].forced += r.forced
		}
	}
	alone, grouped := total[0], total[1]
	wakes := func(r restRun) float64 { return r.perSec(float64(r.wakes)) }
	cpu := func(r restRun) float64 { return 1000 * float64(r.cpu) / float64(r.window) }
	t.Logf("grouped / alone, %d rounds: wake-ups %.1f/s / %.1f/s = %.2f; CPU %.2f m / %.2f m = %.2f",
		*restRounds, wakes(grouped), wakes(alone), wakes(grouped)/wakes(alone), cpu(grouped), cpu(alone), cpu(grouped)/cpu(alone))
	if wakes(grouped) > wakes(alone)*2/3 {
		t.Errorf("grouped probes woke the process %.1f times a second, alone %.1f: grouping does not share wake-ups", wakes(grouped), wakes(alone))
	}
}

// measureRest runs a prober in namespace ns probing addrs with groups of at
// most groupMax, and measures it once every address has been answered.
func measureRest(t *testing.T, ns string, cfg Config, addrs []netip.Addr, groupMax int) restRun {
	t.Helper()
	var log changeLog
	var p *Prober
	netns.DoOrFail(t, ns, func() (err error) {
		p, err = New(WithOnChange(log.add))
		return err
	})
	p.groupMax = groupMax
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	t.Cleanup(stop)
	defer stop()

	p.Set(targets(cfg, addrs...))
	time.Sleep(cfg.Detection() + 3*cfg.Interval) // every address probed and answered
	ru0, t0 := rusage(t)
	s0 := p.Stats()
	time.Sleep(*restWindow)
	ru1, t1 := rusage(t)
	s1 := p.Stats()
	r := restRun{window: t1.Sub(t0), sent: s1.ProbesSent - s0.ProbesSent, restUsage: usageBetween(ru0, ru1)}

	want := float64(len(addrs)) * float64(r.window) / float64(cfg.Interval)
	if float64(r.sent) < want*0.95 || float64(r.sent) > want*1.05+float64(len(addrs)) {
		t.Errorf("%d probes sent in %v, want %.0f", r.sent, r.window, want)
	}
	if valid := s1.RepliesValid - s0.RepliesValid; valid+uint64(len(addrs)) < r.sent {
		t.Errorf("%d valid replies to %d probes", valid, r.sent)
	}
	if cs := log.all(); len(cs) != 0 {
		t.Errorf("%d changes, want none; the first: %+v", len(cs), cs[0])
	}
	if s1.SendErrors != 0 || s1.ReceiveErrors != 0 || s1.Ignored.Total() != 0 {
		t.Errorf("stats %+v", s1)
	}
	return r
}
