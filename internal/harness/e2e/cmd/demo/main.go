package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

func main() {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "demo: needs root (network namespaces)")
		os.Exit(2)
	}
	scenario := flag.String("scenario", os.Getenv("DEMO"), `"" (one SLLBR on deploy/examples), "cluster" (the whole system in the lab; make demo DEMO=cluster) or "node" (on a Kubernetes node; make demo DEMO=node)`)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	run := run
	switch *scenario {
	case "":
	case "cluster":
		run = runCluster
	case "node":
		run = runNode
	default:
		fmt.Fprintf(os.Stderr, "demo: unknown scenario %q (want \"\", \"cluster\" or \"node\")\n", *scenario)
		os.Exit(2)
	}
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("\n==> "+format+"\n", args...) }

func run(ctx context.Context) error {
	root, err := e2e.ModuleRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "sllbrd-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	step("building sllbrd")
	bin, err := e2e.Build(ctx, root, tmp)
	if err != nil {
		return err
	}

	step("creating the lab: client -- gateway (BIRD) -- lb1 (sllbrd) -- targets t1 t2 t3")
	l, err := lab.New(ctx, lab.Options{LBs: 1, Targets: 3, TCPPorts: []uint16{4000, 4001}, UDPPorts: []uint16{4000}})
	if err != nil {
		return err
	}
	defer func() {
		step("cleaning up: namespaces, processes and files of run %s", l.RunID())
		if err := l.Close(); err != nil {
			fmt.Println("cleanup:", err)
		} else {
			fmt.Println("    done")
		}
	}()
	cfg := l.DefaultBIRDConfig()
	cfg.BFD = &lab.BFDConfig{MinRx: 300 * time.Millisecond, MinTx: 300 * time.Millisecond, Multiplier: 5}
	bird, err := l.StartBIRD(ctx, cfg)
	if err != nil {
		return err
	}

	inst, err := startSllbrd(ctx, l, bin, filepath.Join(root, "deploy", "examples"))
	if err != nil {
		return err
	}
	if err := showRouting(ctx, l, bird); err != nil {
		return err
	}
	if err := sendFlows(ctx, l); err != nil {
		return err
	}
	return showMetrics(inst)
}

// startSllbrd starts sllbrd in lb1 on the manifests in dir and waits until
// it has programmed them.
func startSllbrd(ctx context.Context, l *lab.Lab, bin, dir string) (*e2e.Instance, error) {
	step("starting sllbrd in lb1 on %s", dir)
	inst, err := e2e.Start(l, lab.LBName(1), bin, dir, "--queues", "2")
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := inst.WaitProgrammed(wctx, 1); err != nil {
		return nil, err
	}
	fmt.Println("    sllbrd is ready: configuration programmed")
	return inst, nil
}

// showRouting waits until the gateway has learnt the VIPs over BGP and
// prints its routes and BIRD's sessions.
func showRouting(ctx context.Context, l *lab.Lab, bird *lab.BIRD) error {
	step("waiting for the gateway to learn the VIPs over BGP")
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, vip := range []string{"20.0.0.1", "2001:db8::1"} {
		if err := waitRoute(wctx, l, vip); err != nil {
			return err
		}
	}
	show(ctx, l, lab.GatewayNode, "gateway routes to the VIPs", "ip", "route", "show", "20.0.0.1")
	show(ctx, l, lab.GatewayNode, "", "ip", "-6", "route", "show", "2001:db8::1")
	birdc(ctx, bird, "BIRD: BGP sessions", "show", "protocols")
	birdc(ctx, bird, "BIRD: BFD sessions", "show", "bfd", "sessions")
	return nil
}

// sendFlows sends 300 TCP flows to each VIP of the examples, twice, and
// prints where they went and how many went to the same target again.
func sendFlows(ctx context.Context, l *lab.Lab) error {
	step("sending TCP traffic from the client: 300 flows to each VIP, port 4000")
	for _, vip := range lab.DefaultVIPs {
		if vip.String() != "20.0.0.1" && vip.String() != "2001:db8::1" {
			continue
		}
		o := lab.FlowOptions{VIP: vip, Port: 4000, Proto: "tcp", Count: 300, SrcPortBase: 40000}
		got, err := l.Flows(ctx, o)
		if err != nil {
			return err
		}
		fmt.Printf("    %-12s %s\n", vip, perTarget(lab.Distribution(got)))
		again, err := l.Flows(ctx, o)
		if err != nil {
			return err
		}
		same := 0
		for f, t := range got {
			if again[f] == t {
				same++
			}
		}
		fmt.Printf("    %-12s the same 300 flows again: %d reached the same target\n", "", same)
	}
	fmt.Println("    (fd00:111::13, t3's IPv6 endpoint, is not ready in the examples: IPv6 flows use t1 and t2)")
	return nil
}

// showMetrics prints the non-zero samples of a few of sllbrd's metrics.
func showMetrics(inst *e2e.Instance) error {
	step("a few of sllbrd's metrics (http://127.0.0.1:9100/metrics in lb1)")
	_, body, err := inst.Get("/metrics")
	if err != nil {
		return err
	}
	for _, prefix := range []string{"sllbrd_packets_total{", "sllbrd_route_packets_total", "sllbrd_endpoint_packets_total",
		"sllbrd_bgp_session_state{", "sllbrd_bfd_session_up", "sllbrd_nfqueue_kernel_dropped_total", "sllbrd_config_apply_latency_seconds_sum", "sllbrd_ready"} {
		for line := range strings.SplitSeq(body, "\n") {
			if strings.HasPrefix(line, prefix) && !strings.HasSuffix(line, " 0") {
				fmt.Println("    " + line)
			}
		}
	}
	return nil
}

func waitRoute(ctx context.Context, l *lab.Lab, vip string) error {
	fam := "-4"
	if strings.Contains(vip, ":") {
		fam = "-6"
	}
	for {
		out, _ := l.Exec(ctx, lab.GatewayNode, "ip", fam, "route", "show", vip)
		if strings.Contains(out, "proto bird") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the gateway did not learn %s: %w", vip, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func show(ctx context.Context, l *lab.Lab, node, title string, args ...string) {
	if title != "" {
		fmt.Printf("    %s:\n", title)
	}
	out, err := l.Exec(ctx, node, args...)
	if err != nil {
		out = err.Error()
	}
	fmt.Print(indent(out))
}

func birdc(ctx context.Context, b *lab.BIRD, title string, args ...string) {
	out, err := b.Birdc(ctx, args...)
	if err != nil {
		out = err.Error()
	}
	fmt.Printf("    %s:\n%s", title, indent(out))
}

func indent(s string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("        " + line + "\n")
	}
	return b.String()
}

func perTarget(dist map[string]int) string {
	names := make([]string, 0, len(dist))
	for n := range dist {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s: %3d", n, dist[n]))
	}
	return strings.Join(parts, "   ")
}
