package netns

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// TB is the part of testing.TB the helpers use.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

var seq atomic.Int32

// New creates a fresh namespace named PREFIX-PID-N, deleted in Cleanup, and
// returns its name and an open descriptor for it (closed in Cleanup). It
// needs root and ip(8): an integration test (require.Root), so without them
// the test skips, or fails when require.Strict.
func New(tb TB, prefix string) (name string, fd int) {
	tb.Helper()
	require.Root(tb)
	require.Programs(tb, "ip")
	name = fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), seq.Add(1))
	Run(tb, "ip", "netns", "add", name)
	tb.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	f, err := os.Open(filepath.Join(Dir, name))
	if err != nil {
		tb.Fatalf("open netns %s: %v", name, err)
	}
	tb.Cleanup(func() { f.Close() })
	return name, int(f.Fd())
}

// Run runs a command and returns its standard output; it fails tb with the
// command's standard error when the command fails.
func Run(tb TB, args ...string) string {
	tb.Helper()
	out, err := exec.Command(args[0], args[1:]...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		tb.Fatalf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(msg))
	}
	return string(out)
}

// In runs a command inside namespace ns (ip netns exec), as Run.
func In(tb TB, ns string, args ...string) string {
	tb.Helper()
	return Run(tb, append([]string{"ip", "netns", "exec", ns}, args...)...)
}

// DoOrFail is Do that fails tb on error.
func DoOrFail(tb TB, ns string, fn func() error) {
	tb.Helper()
	if err := Do(ns, fn); err != nil {
		tb.Fatalf("in netns %s: %v", ns, err)
	}
}
