// Package hack holds the tests of the scripts in hack/.
package hack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// daemon is a BIRD (or other) process the test started.
type daemon struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// start runs a process in the foreground of the test, killed (by pid) when
// the test ends.
func start(t *testing.T, name string, args ...string) *daemon {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-d.done
	})
	return d
}

// startBIRD runs BIRD in the foreground with its control socket in dir.
func startBIRD(t *testing.T, dir, name string, extra ...string) (*daemon, string) {
	t.Helper()
	conf := filepath.Join(dir, name+".conf")
	if err := os.WriteFile(conf, []byte("router id 192.0.2.1;\nprotocol device {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctl := filepath.Join(dir, name+".ctl")
	d := start(t, "bird", append([]string{"-f", "-c", conf, "-s", ctl}, extra...)...)
	waitFor(t, name+" control socket", func() bool { _, err := os.Stat(ctl); return err == nil || d.exited() })
	if d.exited() {
		t.Fatalf("BIRD %s exited at start", name)
	}
	return d, ctl
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 15s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stubs writes programs that log their arguments to log instead of acting
// (id says root), links the real birdc, and returns a PATH that finds them
// first and has no bird, so the script installs bird2 and then stops the
// packaged daemon.
func stubs(t *testing.T, log string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"id":        `echo 0`,
		"apt-get":   `echo "apt-get $*" >>` + log,
		"systemctl": `echo "systemctl $*" >>` + log,
		"service":   `echo "service $*" >>` + log,
	} {
		script := "#!/bin/sh\n" + body + "\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	birdc, err := exec.LookPath("birdc")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(birdc, filepath.Join(dir, "birdc")); err != nil {
		t.Fatal(err)
	}
	path := dir + ":/usr/bin:/bin"
	if _, err := exec.Command("env", "PATH="+path, "sh", "-c", "command -v bird").Output(); err == nil {
		t.Fatalf("bird is on %s: the script would not install bird2", path)
	}
	return path
}

// runInstallDeps runs hack/install-deps.sh with the stubs and the packaged
// daemon's control socket and pid file given.
func runInstallDeps(t *testing.T, path, ctl, pidfile string) {
	t.Helper()
	birdPath, err := exec.LookPath("bird")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "install-deps.sh")
	cmd.Env = append(os.Environ(), "PATH="+path, "BIRD_CTL="+ctl, "BIRD_PIDFILE="+pidfile, "BIRD_DAEMON="+birdPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install-deps.sh: %v\n%s", err, out)
	}
}

// TestInstallDepsStopsOnlyThePackagedBIRD runs the script after three real
// BIRD daemons started: the "packaged" one on the package's control socket,
// one named by the package's pid file, and someone else's. The first two
// stop; someone else's BIRD keeps running (the script used `pkill -x bird`,
// which killed every BIRD on the host, other tests' included).
func TestInstallDepsStopsOnlyThePackagedBIRD(t *testing.T) {
	require.Integration(t)
	require.Programs(t, "bird", "birdc", "bash")
	dir := t.TempDir()
	log := filepath.Join(dir, "calls.log")
	path := stubs(t, log)
	packaged, packagedCtl := startBIRD(t, dir, "packaged")
	pidfile := filepath.Join(dir, "bird.pid")
	byPidfile, _ := startBIRD(t, dir, "pidfile", "-P", pidfile)
	waitFor(t, "the pid file", func() bool { _, err := os.Stat(pidfile); return err == nil })
	other, otherCtl := startBIRD(t, dir, "other")

	runInstallDeps(t, path, packagedCtl, pidfile)

	calls, _ := os.ReadFile(log)
	if !strings.Contains(string(calls), "apt-get install") || !strings.Contains(string(calls), "bird2") {
		t.Fatalf("the script did not install bird2: %q", calls)
	}
	if strings.Contains(string(calls), "service") {
		t.Errorf("the script ran Debian's init script, which stops every /usr/sbin/bird by name: %q", calls)
	}
	waitFor(t, "the packaged BIRD to exit", packaged.exited)
	waitFor(t, "the BIRD of the pid file to exit", byPidfile.exited)
	if other.exited() {
		t.Fatal("someone else's BIRD was stopped")
	}
	if out, err := exec.Command("birdc", "-s", otherCtl, "show", "status").CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "Daemon is up and running") {
		t.Errorf("someone else's BIRD does not answer: %v\n%s", err, out)
	}
}

// TestInstallDepsIgnoresAStalePidFile: a pid file naming a process that is
// not the packaged BIRD binary (the pid was reused) is left alone.
func TestInstallDepsIgnoresAStalePidFile(t *testing.T) {
	require.Integration(t)
	require.Programs(t, "bird", "birdc", "bash", "sleep")
	dir := t.TempDir()
	path := stubs(t, filepath.Join(dir, "calls.log"))
	sleeper := start(t, "sleep", "60")
	pidfile := filepath.Join(dir, "bird.pid")
	if err := os.WriteFile(pidfile, fmt.Appendf(nil, "%d\n", sleeper.cmd.Process.Pid), 0o644); err != nil {
		t.Fatal(err)
	}
	runInstallDeps(t, path, filepath.Join(dir, "no-such.ctl"), pidfile)
	// kill(1) returned before the script did; give delivery a moment.
	time.Sleep(500 * time.Millisecond)
	if sleeper.exited() {
		t.Fatal("the process named by a stale pid file was killed")
	}
}
