package node

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// daemon is one of the node's long-running processes. It runs in its own
// session, outlives the program that started it (make node-up returns with
// the node running) and is known afterwards by its PID file only.
type daemon struct {
	name string // etcd, kube-apiserver, ..., also its log and PID file names
	path string // the executable
	args []string
}

// stopTimeout is how long a daemon gets to exit after SIGTERM.
const stopTimeout = 20 * time.Second

// start runs dm with its output appended to its log and writes its PID
// file. A daemon of that name that is still running is an error.
func (d Dirs) start(dm daemon) (int, error) {
	if pid, ok := d.running(dm); ok {
		return 0, fmt.Errorf("%s is already running (pid %d)", dm.name, pid)
	}
	for _, dir := range []string{filepath.Dir(d.log(dm.name)), filepath.Dir(d.pidFile(dm.name))} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return 0, fmt.Errorf("start %s: %w", dm.name, err)
		}
	}
	logf, err := os.OpenFile(d.log(dm.name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", dm.name, err)
	}
	defer logf.Close() // the child has its own descriptor
	fmt.Fprintf(logf, "=== %s: %s %s\n", time.Now().Format(time.RFC3339), dm.path, strings.Join(dm.args, " "))
	cmd := exec.Command(dm.path, dm.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own session: no signal of the starter's terminal or process group
	// reaches it, and no parent-death signal: it outlives the starter.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", dm.name, err)
	}
	pid := cmd.Process.Pid
	go cmd.Wait() //nolint:errcheck // reaps the child while the starter lives; its exit shows in its log
	if err := os.WriteFile(d.pidFile(dm.name), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return 0, fmt.Errorf("start %s: %w", dm.name, err)
	}
	return pid, nil
}

// running returns the PID of dm when its PID file names a live process
// that runs dm's executable with arguments in d's state directory: a stale
// PID file whose PID was reused names someone else.
func (d Dirs) running(dm daemon) (int, bool) {
	b, err := os.ReadFile(d.pidFile(dm.name))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, false
	}
	return pid, d.owns(pid, dm.path)
}

// owns reports whether pid is alive (not a zombie), runs the executable
// path and names the state or run directory on its command line.
func (d Dirs) owns(pid int, path string) bool {
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	exe, err := os.Readlink(filepath.Join(proc, "exe"))
	if err != nil {
		return false
	}
	exe = strings.TrimSuffix(exe, " (deleted)") // a rebuilt binary
	want, err := filepath.EvalSymlinks(path)
	if err != nil {
		want = path
	}
	if exe != want {
		return false
	}
	if zombie(pid) {
		return false
	}
	// A process that has just called execve shows an empty command line
	// for a moment: look again.
	for range 100 {
		cmdline, err := os.ReadFile(filepath.Join(proc, "cmdline"))
		if err != nil {
			return false
		}
		if len(cmdline) > 0 {
			return bytes.Contains(cmdline, []byte(d.State)) || bytes.Contains(cmdline, []byte(d.Run))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// zombie reports whether pid has exited and waits for its parent.
func zombie(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain ") ".
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X'
}

// stop sends SIGTERM to dm, SIGKILL after stopTimeout, waits for its exit
// and removes its PID file. A daemon that does not run is no error.
func (d Dirs) stop(dm daemon) error {
	pid, ok := d.running(dm)
	if ok {
		if err := terminate(pid, stopTimeout); err != nil {
			return fmt.Errorf("stop %s: %w", dm.name, err)
		}
	}
	if err := os.Remove(d.pidFile(dm.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("stop %s: %w", dm.name, err)
	}
	return nil
}

// terminate sends SIGTERM to pid, SIGKILL after timeout, and waits until
// the process is gone (or a zombie).
func terminate(pid int, timeout time.Duration) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("SIGTERM %d: %w", pid, err)
	}
	if waitGone(pid, timeout) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGKILL %d: %w", pid, err)
	}
	if !waitGone(pid, 10*time.Second) {
		return fmt.Errorf("pid %d still runs 10 s after SIGKILL", pid)
	}
	return nil
}

func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if zombie(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
