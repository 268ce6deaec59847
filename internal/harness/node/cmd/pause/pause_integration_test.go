package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// TestIntegrationPauseReapsAndStopsOnSignal runs the built pause as PID 1
// of a new PID namespace (as in a pod that shares its process namespace),
// orphans a process into that namespace, wants pause to inherit and reap
// it, and then to exit 0 on SIGTERM, and on SIGINT.
func TestIntegrationPauseReapsAndStopsOnSignal(t *testing.T) {
	require.Root(t)
	require.Programs(t, "go", "nsenter", "sh", "sleep")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := buildPause(ctx, t)

	if out, err := exec.CommandContext(ctx, bin, "x").CombinedOutput(); exitCode(err) != 2 || !strings.Contains(string(out), "no arguments") {
		t.Errorf("pause x: %q (%v), want exit status 2 and a message", out, err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin)
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var waitErr error
			exited := make(chan struct{})
			go func() { waitErr = cmd.Wait(); close(exited) }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill() // by PID; a no-op once it has exited
				<-exited
			})
			// Reaping happens only in pause's signal loop: once the orphan
			// is gone, pause also handles SIGTERM and SIGINT.
			orphanAndWaitForReap(ctx, t, cmd.Process.Pid)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
				if waitErr != nil {
					t.Errorf("pause after %v: %v, want exit status 0", sig, waitErr)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("pause still runs 10 s after %v", sig)
			}
		})
	}
}

// buildPause builds the command as hack/image does: static and stripped.
func buildPause(ctx context.Context, t *testing.T) string {
	t.Helper()
	root, err := e2e.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := e2e.BuildReleaseOf(ctx, root, "./internal/harness/node/cmd/pause", filepath.Join(t.TempDir(), "pause"))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(bin); err == nil {
		t.Logf("pause binary: %d bytes", info.Size())
	}
	return bin
}

// orphanAndWaitForReap starts a shell in pid's PID namespace that leaves a
// sleep behind, sees the sleep become pid's child, then sees pid reap it
// (a child that stays, as a zombie, fails the test).
func orphanAndWaitForReap(ctx context.Context, t *testing.T, pid int) {
	t.Helper()
	out, err := exec.CommandContext(ctx, "nsenter", "--target", strconv.Itoa(pid), "--pid", "--",
		"sh", "-c", "sleep 2 </dev/null >/dev/null 2>&1 & exit 0").CombinedOutput() // the sleep must not hold the output pipe
	if err != nil {
		t.Fatalf("nsenter: %v: %s", err, out)
	}
	adopted := false
	deadline := time.Now().Add(10 * time.Second)
	for {
		kids, err := children(pid)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kids {
			adopted = adopted || k.comm == "sleep"
		}
		if adopted && len(kids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pause (PID %d): adopted the orphan %v; children still there after 10 s: %+v", pid, adopted, kids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type proc struct {
	pid   int
	comm  string
	state string // R, S, Z, ...
}

// children lists the processes whose parent is ppid, from /proc.
func children(ppid int) ([]proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue // exited meanwhile
		}
		if err != nil {
			return nil, err
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		s := string(data)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			return nil, errors.New("/proc/" + e.Name() + "/stat: " + s)
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 2 {
			return nil, errors.New("/proc/" + e.Name() + "/stat: " + s)
		}
		if p, _ := strconv.Atoi(f[1]); p == ppid {
			out = append(out, proc{pid: pid, comm: s[open+1 : end], state: f[0]})
		}
	}
	return out, nil
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err == nil {
		return 0
	}
	return -1
}
