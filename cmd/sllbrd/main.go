package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// subcommands are the roles other than the default one (the SLLBR
// daemon): `sllbrd <name> [flags]` runs subcommands[name] with the flags and
// exits with the code it returns.
var subcommands = map[string]func(args []string) int{
	"controller": controllerMain,
	"show":       showMain,
	"explain":    explainMain,
	"log-level":  logLevelMain,
	"target":     targetMain,
}

func main() {
	if len(os.Args) > 1 {
		if sub, ok := subcommands[os.Args[1]]; ok {
			os.Exit(sub(os.Args[2:]))
		}
	}
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sllbrd:", err)
		os.Exit(2)
	}
	if cfg.showVersion {
		fmt.Println("sllbrd", version)
		return
	}
	cfg.admin.level.Set(cfg.logLevel) // `sllbrd log-level` changes it at run time
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.admin.level}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		log.Error("sllbrd stopped", "err", err)
		os.Exit(1)
	}
	log.Info("sllbrd stopped")
}

// runRole parses a role's command line with parse and runs it with run
// until SIGTERM or SIGINT, logging in JSON at the level the command line
// sets (client-go's own messages too); it returns the exit code: 2 for a
// bad command line, 1 when run fails.
func runRole[C any](name string, args []string, parse func([]string) (*C, error), level func(*C) slog.Level,
	run func(context.Context, *C, *slog.Logger) error, stopped string) int {
	cfg, err := parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level(cfg)}))
	klog.SetSlogLogger(log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		log.Error(name+" stopped", "err", err)
		return 1
	}
	log.Info(stopped)
	return 0
}
