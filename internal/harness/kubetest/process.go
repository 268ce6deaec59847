package kubetest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// stopTimeout is how long a process gets to exit after SIGTERM.
const stopTimeout = 15 * time.Second

// process is one started binary and its log file.
type process struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

// startProcess starts a binary with its output in logPath and stops it (by
// PID) when the test ends.
func startProcess(t testing.TB, path string, args []string, logPath string) *process {
	t.Helper()
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	p := &process{cmd: exec.Command(path, args...), logPath: logPath, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go p.run(started, log)
	if err := <-started; err != nil {
		t.Fatalf("kubetest: start %s: %v", path, err)
	}
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Logf("kubetest: stop %s: %v", path, err)
		}
	})
	return p
}

// run starts the process and waits for it on one locked OS thread. The
// kernel sends Pdeathsig when the forking thread ends, not the process:
// Go ends a thread whose goroutine exits while locked to it (tests that
// enter network namespaces do so), so the forking thread must outlive the
// child, and a locked goroutine that waits for it guarantees that.
func (p *process) run(started chan<- error, log *os.File) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer log.Close()
	if err := p.cmd.Start(); err != nil {
		started <- err
		return
	}
	started <- nil
	p.err = p.cmd.Wait()
	close(p.done)
}

func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM, then SIGKILL after stopTimeout, and waits for the exit.
func (p *process) stop() error {
	if !p.running() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGTERM pid %d: %w", p.cmd.Process.Pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGKILL pid %d: %w", p.cmd.Process.Pid, err)
	}
	<-p.done
	return nil
}

// logTail returns the end of the process's log.
func (p *process) logTail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	const n = 3000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
