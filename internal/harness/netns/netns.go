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
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		var res result
		defer func() {
			if p := recover(); p != nil {
				res.panicked = p
			}
			done <- res
		}()
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
		res.err = fn()
	}()
	res := <-done
	if res.panicked != nil {
		panic(res.panicked)
	}
	return res.err
}
