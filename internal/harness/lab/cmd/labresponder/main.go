package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/lab/responder"
)

// podNameEnv is where a pod passes its own name (downward API), the
// default target name.
const podNameEnv = "POD_NAME"

func main() {
	var drain time.Duration
	cfg, err := parseFlags(os.Args[1:], os.Getenv, os.Stderr, &drain)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "labresponder:", err)
		os.Exit(2)
	}
	if err := run(cfg, drain); err != nil {
		fmt.Fprintln(os.Stderr, "labresponder:", err)
		os.Exit(1)
	}
}

// parseFlags reads the command line; getenv supplies the default name.
// drain receives -drain.
func parseFlags(args []string, getenv func(string) string, out io.Writer, drain *time.Duration) (responder.Config, error) {
	var cfg responder.Config
	fs := flag.NewFlagSet("labresponder", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.DurationVar(drain, "drain", 0, "keep serving this long after SIGTERM, as an application does while its endpoint is removed (0: stop at once)")
	fs.StringVar(&cfg.Name, "name", getenv(podNameEnv), "target name put in every reply (default $"+podNameEnv+")")
	addrs := fs.String("addr", "", "comma-separated addresses to serve on (the VIPs; they may be added to an interface later)")
	udp := fs.String("udp", "", "UDP ports, e.g. 80,5000-5010")
	tcp := fs.String("tcp", "", "TCP ports, e.g. 80,5000-5010")
	echo := fs.String("echo", "", "TCP ports of long-lived echo connections")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if *drain < 0 || *drain > time.Minute {
		return cfg, fmt.Errorf("-drain %v: want 0 to 1m", *drain)
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if cfg.Name == "" {
		return cfg, fmt.Errorf("no name: set -name or $%s", podNameEnv)
	}
	if strings.TrimSpace(*addrs) == "" {
		return cfg, errors.New("-addr is required")
	}
	for _, s := range strings.Split(*addrs, ",") {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return cfg, fmt.Errorf("-addr: %w", err)
		}
		cfg.Addrs = append(cfg.Addrs, a)
	}
	var err error
	if cfg.UDPPorts, err = responder.ParsePorts(*udp); err != nil {
		return cfg, fmt.Errorf("-udp: %w", err)
	}
	if cfg.TCPPorts, err = responder.ParsePorts(*tcp); err != nil {
		return cfg, fmt.Errorf("-tcp: %w", err)
	}
	if cfg.EchoPorts, err = responder.ParsePorts(*echo); err != nil {
		return cfg, fmt.Errorf("-echo: %w", err)
	}
	return cfg, nil
}

// run serves until SIGTERM or SIGINT and drain after it, then closes every
// socket and returns nil (exit status 0).
func run(cfg responder.Config, drain time.Duration) error {
	srv, err := responder.Listen(cfg)
	if err != nil {
		return err
	}
	signalled, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-signalled.Done()
		time.Sleep(drain)
		cancel()
	}()
	fmt.Println("ready")
	return srv.Serve(ctx)
}
