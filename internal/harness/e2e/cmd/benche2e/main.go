package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

// options are the command line; the defaults are what `make bench-e2e` runs.
type options struct {
	rounds   int           // alternations of kernel and sllbrd measurements
	duration time.Duration // one measurement blast
	senders  int           // client sending threads of the unpinned setups
	search   bool          // find the highest loss-free rate
	profile  bool          // perf record sllbrd during a blast
	// profileRounds is how many times each profiled setup is profiled,
	// in turn.
	profileRounds int
	timeout       time.Duration // bound of the whole run
	// rig is the lab: rigPath (client, gateway, bridges, lb1, three
	// targets) or rigLB (lb.go: the LB alone between a frame generator
	// and a target that drops at XDP).
	rig     string
	verbose bool // log the lab's progress
}

func parseOptions(args []string, errOut io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("benche2e", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.IntVar(&o.rounds, "rounds", 3, "measurement rounds, each alternating kernel forwarding and sllbrd")
	fs.DurationVar(&o.duration, "duration", 4*time.Second, "length of one measurement blast")
	fs.IntVar(&o.senders, "senders", max(runtime.NumCPU(), 1), "client sending threads of the unpinned setups")
	fs.BoolVar(&o.search, "search", true, "search the highest offered rate each unpinned setup carries with <0.1% loss")
	fs.BoolVar(&o.profile, "profile", true, "profile each unpinned setup with perf record -a during a blast (if perf works)")
	fs.IntVar(&o.profileRounds, "profile-rounds", 3, "profiles of each unpinned setup, taken in turn")
	fs.DurationVar(&o.timeout, "timeout", 9*time.Minute, "bound of the whole run")
	fs.BoolVar(&o.verbose, "v", false, "log the lab's progress")
	fs.StringVar(&o.rig, "rig", rigPath, "the lab: "+rigPath+" (the whole path: client, gateway, bridges, lb1, targets) or "+rigLB+" (lb1 alone between a frame generator and a target dropping at XDP)")
	if err := fs.Parse(args); err != nil {
		return o, err // flag has printed it
	}
	if err := o.validate(fs.Args()); err != nil {
		fmt.Fprintln(errOut, "benche2e:", err)
		return o, err
	}
	return o, nil
}

func (o options) validate(rest []string) error {
	switch {
	case len(rest) > 0:
		return fmt.Errorf("unexpected arguments %v", rest)
	case o.rounds < 1 || o.rounds > 10:
		return fmt.Errorf("-rounds %d: want 1..10", o.rounds)
	case o.duration < 500*time.Millisecond || o.duration > 20*time.Second:
		return fmt.Errorf("-duration %v: want 0.5s..20s", o.duration)
	case o.profileRounds < 1 || o.profileRounds > 5:
		return fmt.Errorf("-profile-rounds %d: want 1..5", o.profileRounds)
	case o.senders < 1 || o.senders > 8:
		return fmt.Errorf("-senders %d: want 1..8", o.senders)
	case o.rig != rigPath && o.rig != rigLB:
		return fmt.Errorf("-rig %q: want %s or %s", o.rig, rigPath, rigLB)
	case o.timeout <= 0 || o.timeout > 10*time.Minute:
		return errors.New("-timeout: want (0, 10m]")
	}
	return nil
}

func main() {
	o, err := parseOptions(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "benche2e: needs root (network namespaces); run `sudo make bench-e2e`")
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benche2e:", err)
		os.Exit(1)
	}
}
