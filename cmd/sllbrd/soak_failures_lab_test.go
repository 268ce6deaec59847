package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// The soak's failures, said again at the very end of its output: a failed
// run prints every process's log after its checks, and a CI log cut to its
// tail would otherwise show those logs and not what failed or the seed that
// replays it.

// recorders are the failure records of the tests that keep one, by test:
// the package's shared helpers (waitSince, exec1) add their fatal failures
// to the record of the test they fail, when it keeps one.
var recorders sync.Map // *testing.T -> *soakFailures

// noteFailure adds msg to t's failure record, if t keeps one.
func noteFailure(t *testing.T, msg string) {
	if f, ok := recorders.Load(t); ok {
		f.(*soakFailures).record("%s", msg)
	}
}

// soakFailures records what the soak's checks, and the helpers they call,
// failed on.
type soakFailures struct {
	mu     sync.Mutex
	msgs   []string
	replay string // the make command that replays the run
}

// errorf fails t with the message and records it.
func (f *soakFailures) errorf(t *testing.T, format string, args ...any) {
	t.Helper()
	f.record(format, args...)
	t.Errorf(format, args...)
}

// fatalf fails t with the message, records it and stops the test.
func (f *soakFailures) fatalf(t *testing.T, format string, args ...any) {
	t.Helper()
	f.record(format, args...)
	t.Fatalf(format, args...)
}

func (f *soakFailures) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

// sayAtTheEnd registers, as t's first cleanup and so its last to run, the
// summary of a failed run.
func (f *soakFailures) sayAtTheEnd(t *testing.T) {
	recorders.Store(t, f)
	t.Cleanup(func() {
		recorders.Delete(t)
		if !t.Failed() {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		var b strings.Builder
		fmt.Fprintf(&b, "the soak failed; replay: %s\n", f.replay)
		if len(f.msgs) == 0 {
			b.WriteString("  it failed outside the soak's checks and the shared helpers (the cluster's setup or the lab's harness): its first error is above the logs")
		}
		for i, m := range f.msgs {
			if i > 0 {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "  %d. %s", i+1, firstLines(m, 6))
		}
		t.Log(b.String())
	})
}

// firstLines is s cut to its first n lines.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n  (%d more lines above)", strings.Count(lines[n], "\n")+1)
}
