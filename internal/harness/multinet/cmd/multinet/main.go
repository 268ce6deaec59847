package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sllbrd/sllbrd/internal/harness/multinet"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := multinet.Main(ctx, os.Environ(), os.Stdin, os.Stdout, multinet.DialKubeconfig)
	stop()
	os.Exit(code)
}
