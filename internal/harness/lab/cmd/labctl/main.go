package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

type stdLogger struct{}

func (stdLogger) Logf(format string, args ...any) { log.Printf(format, args...) }

func main() {
	log.SetFlags(log.Ltime)
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "up":
		err = up(ctx, os.Args[2:])
	case "down":
		err = down(ctx, os.Args[2:])
	case "status":
		err = status()
	default:
		usage()
	}
	if err != nil {
		stop()
		log.Fatalf("labctl %s: %v", os.Args[1], err)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: labctl up [flags] | status | down -run ID | -all   (labctl up -h for flags)")
	os.Exit(2)
}

func up(ctx context.Context, args []string) (err error) {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	lbs := fs.Int("lbs", 1, "number of LB namespaces (1..3)")
	targets := fs.Int("targets", 3, "number of targets")
	baseline := fs.Bool("baseline", false, "program plain kernel forwarding (no sllbrd)")
	ecmp := fs.Bool("ecmp", false, "with -baseline: ECMP over all targets")
	bird := fs.Bool("bird", false, "run BIRD in the gateway (BGP to the LBs)")
	check := fs.Bool("check", false, "run UDP and TCP flows to every VIP and print where they went")
	detach := fs.Bool("detach", false, "leave the lab running and exit")
	_ = fs.Parse(args)
	l, err := lab.New(ctx, lab.Options{LBs: *lbs, Targets: *targets, Detach: *detach, Logger: stdLogger{}})
	if err != nil {
		return err
	}
	defer func() {
		if !*detach || err != nil {
			err = errors.Join(err, l.Close())
		}
	}()
	if *baseline {
		if err := l.Baseline(ctx, lab.BaselineOptions{ECMP: *ecmp}); err != nil {
			return err
		}
	}
	if *bird {
		b, err := l.StartBIRD(ctx, l.DefaultBIRDConfig())
		if err != nil {
			return err
		}
		log.Printf("bird: pid %d, birdc -s %s show protocols", b.Process.PID, b.Socket)
	}
	describe(l)
	if *check {
		runChecks(ctx, l)
	}
	if *detach {
		fmt.Printf("lab %s left running; remove with: labctl down -run %s\n", l.RunID(), l.RunID())
		return nil
	}
	log.Printf("lab %s up; Ctrl-C removes it", l.RunID())
	<-ctx.Done()
	return nil
}

func describe(l *lab.Lab) {
	fmt.Printf("run %s: namespaces %s\n", l.RunID(), l.NS("<node>"))
	fmt.Printf("  %-4s %s %s\n", lab.ClientNode, lab.ClientAddrs().V4, lab.ClientAddrs().V6)
	fmt.Printf("  %-4s %s %s (vlan-100)\n", lab.GatewayNode, lab.GatewayAddrs().V4, lab.GatewayAddrs().V6)
	for i, n := range l.LBs() {
		fmt.Printf("  %-4s vlan-100 %s %s, net1 %s %s\n", n, lab.LBGatewaySide(i+1).V4, lab.LBGatewaySide(i+1).V6,
			lab.LBTargetSide(i+1).V4, lab.LBTargetSide(i+1).V6)
	}
	for i, n := range l.Targets() {
		pid := 0
		if p := l.Responder(n); p != nil {
			pid = p.PID
		}
		fmt.Printf("  %-4s net1 %s %s, responder pid %d\n", n, lab.TargetAddrs(i+1).V4, lab.TargetAddrs(i+1).V6, pid)
	}
	fmt.Printf("  VIPs %v\n", l.VIPs())
}

func runChecks(ctx context.Context, l *lab.Lab) {
	for _, vip := range l.VIPs() {
		for _, proto := range []string{"udp", "tcp"} {
			served, err := l.Flows(ctx, lab.FlowOptions{VIP: vip, Proto: proto, Count: 30})
			fmt.Printf("  %s %-12s %v", proto, vip, lab.Distribution(served))
			if err != nil {
				fmt.Printf("  error: %v", err)
			}
			fmt.Println()
		}
	}
}

func status() error {
	runs, err := lab.Runs()
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		fmt.Println("no lab namespaces")
	}
	ids := make([]string, 0, len(runs))
	for id := range runs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Printf("run %s: %s\n", id, strings.Join(runs[id], " "))
	}
	return nil
}

func down(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("down", flag.ExitOnError)
	run := fs.String("run", "", "run id to remove")
	all := fs.Bool("all", false, "remove every lab run (sllbrd-lab-* namespaces)")
	_ = fs.Parse(args)
	var ids []string
	switch {
	case *all:
		runs, err := lab.Runs()
		if err != nil {
			return err
		}
		for id := range runs {
			ids = append(ids, id)
		}
	case *run != "":
		ids = []string{*run}
	default:
		return errors.New("need -run ID or -all")
	}
	var errs []error
	for _, id := range ids {
		errs = append(errs, lab.Remove(ctx, id))
		fmt.Printf("removed run %s\n", id)
	}
	return errors.Join(errs...)
}
