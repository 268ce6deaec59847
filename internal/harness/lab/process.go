package lab

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a program the lab started inside a namespace; Close stops it.
type Process struct {
	Name    string // label, e.g. "responder-t1"
	Node    string
	PID     int
	LogPath string // its stdout and stderr (after the ready line)

	cmd      *exec.Cmd
	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
	stopErr  error
}

const stopGrace = 3 * time.Second

// Start runs args inside node's namespace (through `ip netns exec`, which
// execs the program, so PID is the program's own). The lab stops it on Close.
func (l *Lab) Start(node, name string, args ...string) (*Process, error) {
	return l.start(node, name, "", 0, nil, args...)
}

// StartInCgroup is Start with the program in the memory cgroup cg from its
// first instruction on (its PID joins the cgroup before `ip netns exec`);
// it returns once the PID is in the cgroup.
func (l *Lab) StartInCgroup(node, name string, cg *MemCgroup, args ...string) (*Process, error) {
	return l.start(node, name, "", 0, cg, args...)
}

// start is Start that, when readyLine is not empty, waits up to timeout for
// the program to print that line on stdout, and runs it in cg if not nil.
func (l *Lab) start(node, name, readyLine string, timeout time.Duration, cg *MemCgroup, args ...string) (*Process, error) {
	if len(args) == 0 {
		return nil, errors.New("lab: start: no command")
	}
	logf, err := os.Create(filepath.Join(l.tmp, name+".log"))
	if err != nil {
		return nil, fmt.Errorf("lab: start %s: %w", name, err)
	}
	defer logf.Close() // the child keeps its own descriptor
	argv := append([]string{"ip", "netns", "exec", l.NS(node)}, args...)
	if cg != nil {
		// The shell joins the cgroup, then becomes ip, which becomes the
		// program: one PID throughout.
		argv = append([]string{"sh", "-c", `echo $$ > "$0" && exec "$@"`, cg.ProcsFile()}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = logf
	if !l.opts.Detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	}
	cmd.Stdout = logf
	var stdout *os.File // read end of the child's stdout when waiting for readyLine
	if readyLine != "" {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("lab: start %s: %w", name, err)
		}
		stdout, cmd.Stdout = r, w
	}
	p := &Process{Name: name, Node: node, LogPath: logf.Name(), cmd: cmd, done: make(chan struct{})}
	err = l.spawnTracked(p)
	if stdout != nil {
		cmd.Stdout.(*os.File).Close() // the child holds its own copy
	}
	if err != nil {
		if stdout != nil {
			stdout.Close()
		}
		return nil, fmt.Errorf("lab: start %s: %w", name, err)
	}
	go func() { p.waitErr = cmd.Wait(); close(p.done) }()
	if cg != nil {
		if err := cg.waitMember(p.PID, 5*time.Second); err != nil {
			p.Stop()
			return nil, fmt.Errorf("lab: start %s: %w (log %s)", name, err, p.LogPath)
		}
	}
	if stdout != nil {
		if err := waitLine(stdout, readyLine, timeout, logf.Name()); err != nil {
			p.Stop()
			return nil, fmt.Errorf("lab: start %s: %w (log %s)", name, err, p.LogPath)
		}
	}
	return p, nil
}

// waitLine reads r until a line equal to want, then copies the rest of r to
// the file logPath in the background.
func waitLine(r io.ReadCloser, want string, timeout time.Duration, logPath string) error {
	found := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(r)
		ok := false
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == want {
				ok = true
				break
			}
		}
		found <- ok
		if ok {
			if f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0); err == nil {
				_, _ = io.Copy(f, r)
				f.Close()
			}
		}
		_, _ = io.Copy(io.Discard, r)
		r.Close()
	}()
	select {
	case ok := <-found:
		if !ok {
			return fmt.Errorf("exited before printing %q", want)
		}
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("no %q within %v", want, timeout)
	}
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop sends SIGTERM, waits up to 3 s, then SIGKILL, and reaps the process.
// It is idempotent; a process that already exited is no error.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() { p.stopErr = p.stop() })
	return p.stopErr
}

func (p *Process) stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("lab: stop %s (pid %d): %w", p.Name, p.PID, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(stopGrace):
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("lab: kill %s (pid %d): %w", p.Name, p.PID, err)
	}
	<-p.done
	return nil
}

// Kill sends SIGKILL, as a crash or the OOM killer would end the process,
// and waits until it is gone.
func (p *Process) Kill() error {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("lab: kill %s (pid %d): %w", p.Name, p.PID, err)
	}
	<-p.done
	return nil
}

// Signal sends sig to the process without waiting.
func (p *Process) Signal(sig os.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("lab: signal %s (pid %d): %w", p.Name, p.PID, err)
	}
	return nil
}

// Terminate sends SIGTERM and waits up to timeout for the process to exit
// by itself; it fails (leaving the process to Stop) when it does not.
func (p *Process) Terminate(timeout time.Duration) error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("lab: terminate %s (pid %d): %w", p.Name, p.PID, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("lab: %s (pid %d) still runs %v after SIGTERM", p.Name, p.PID, timeout)
	}
}

// Stats reads the process's CPU time and RSS.
func (p *Process) Stats() (ProcStats, error) { return ReadProcStats(p.PID) }

// Err is the process's exit error once Done is closed (nil for exit 0).
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.waitErr
	default:
		return nil
	}
}
