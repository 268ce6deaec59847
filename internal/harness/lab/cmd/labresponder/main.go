package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sllbrd/sllbrd/internal/harness/lab/responder"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "labresponder:", err)
		os.Exit(1)
	}
}

func run() error {
	name := flag.String("name", "", "target name put in every reply")
	addrs := flag.String("addr", "", "comma-separated addresses to serve on (the VIPs)")
	udp := flag.String("udp", "", "UDP ports, e.g. 80,5000-5010")
	tcp := flag.String("tcp", "", "TCP ports, e.g. 80,5000-5010")
	echo := flag.String("echo", "", "TCP ports of long-lived echo connections")
	flag.Parse()
	cfg := responder.Config{Name: *name}
	for _, s := range strings.Split(*addrs, ",") {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-addr: %w", err)
		}
		cfg.Addrs = append(cfg.Addrs, a)
	}
	var err error
	if cfg.UDPPorts, err = responder.ParsePorts(*udp); err != nil {
		return fmt.Errorf("-udp: %w", err)
	}
	if cfg.TCPPorts, err = responder.ParsePorts(*tcp); err != nil {
		return fmt.Errorf("-tcp: %w", err)
	}
	if cfg.EchoPorts, err = responder.ParsePorts(*echo); err != nil {
		return fmt.Errorf("-echo: %w", err)
	}
	srv, err := responder.Listen(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	fmt.Println("ready")
	return srv.Serve(ctx)
}
