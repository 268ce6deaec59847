package netns

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// Dir is where `ip netns` keeps named namespaces.
const Dir = "/run/netns"

// Do runs fn on an OS thread switched into the named namespace ns and
// returns fn's error; a panic in fn is re-raised in the caller.
func Do(ns string, fn func() error) error {
	type result struct {
		err      error
		panicked any
	}
	done := make(chan result, 1)
	go func() {
		// The thread goes back to its namespace and is unlocked after fn.
		// Left locked, it would die with this goroutine, except the main
		// thread, which the runtime keeps, idle, where it is: in ns, so that
		// /proc/self/ns/net says ns and ns outlives its deletion.
		runtime.LockOSThread()
		var res result
		defer func() {
			if p := recover(); p != nil {
				res.panicked = p
			}
			done <- res
		}()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			res.err = fmt.Errorf("open the thread's network namespace: %w", err)
			return // locked: the thread dies, it never left its namespace anyway
		}
		defer own.Close()
		f, err := os.Open(filepath.Join(Dir, ns))
		if err != nil {
			res.err = fmt.Errorf("open netns %s: %w", ns, err)
			return
		}
		err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		f.Close()
		if err != nil {
			res.err = fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		defer func() {
			if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
				runtime.UnlockOSThread() // back home: fit for other goroutines
			}
		}()
		res.err = fn()
	}()
	res := <-done
	if res.panicked != nil {
		panic(res.panicked)
	}
	return res.err
}
