package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 {
		os.Stderr.WriteString("pause: takes no arguments\n")
		os.Exit(2)
	}
	// One channel per kind: a burst of SIGCHLD cannot crowd out SIGTERM.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	child := make(chan os.Signal, 1)
	signal.Notify(child, syscall.SIGCHLD)
	for {
		reap() // also the children that exited before Notify
		select {
		case <-stop:
			os.Exit(0)
		case <-child:
		}
	}
}

// reap collects every child that has exited. Signals coalesce, so one
// SIGCHLD may stand for several children: wait until none is left.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil { // none exited (0) or no children (ECHILD)
			return
		}
	}
}
