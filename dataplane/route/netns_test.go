package route

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

var netnsSeq atomic.Int32

// newNetns creates a fresh network namespace named sllbrd-k-rt-PID-N,
// deleted in t.Cleanup, and returns its name and an open fd for it. It skips
// the test when not root or when ip(8) is missing.
func newNetns(t *testing.T) (string, int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8)")
	}
	name := fmt.Sprintf("sllbrd-k-rt-%d-%d", os.Getpid(), netnsSeq.Add(1))
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	f, err := os.Open("/run/netns/" + name)
	if err != nil {
		t.Fatalf("open netns: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return name, int(f.Fd())
}

// run runs a command and returns its stdout; it fails the test on error.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, msg)
	}
	return string(out)
}

// ipIn runs "ip ARGS" inside netns ns.
func ipIn(t *testing.T, ns string, args string) string {
	t.Helper()
	return run(t, "ip", append([]string{"-n", ns}, strings.Fields(args)...)...)
}
