package sysctl

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestIntegrationEnsureInFreshNetns runs Ensure on a thread inside a new
// network namespace (sllbrd-k-sysctl-PID), so the host is never changed.
func TestIntegrationEnsureInFreshNetns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8)")
	}
	ns := fmt.Sprintf("sllbrd-k-sysctl-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })

	type result struct {
		before, fixed, after []Finding
		err                  error
	}
	done := make(chan result, 1)
	go func() {
		// The thread stays locked and dies with the goroutine: it never
		// returns to the pool while in the test namespace.
		runtime.LockOSThread()
		var r result
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{err: err}
			return
		}
		if r.before, r.err = Ensure(false); r.err == nil {
			if r.fixed, r.err = Ensure(true); r.err == nil {
				r.after, r.err = Ensure(false)
			}
		}
		done <- r
	}()
	r := <-done
	if r.err != nil {
		t.Fatalf("Ensure in netns: %v", r.err)
	}
	t.Logf("fresh namespace: %v", r.before)
	if len(r.before) == 0 {
		t.Errorf("a fresh namespace reported no wrong setting (ip_forward is 0 there)")
	}
	if len(r.fixed) != len(r.before) {
		t.Errorf("set fixed %v, want the %d found before", r.fixed, len(r.before))
	}
	for _, f := range r.fixed {
		if !f.Fixed {
			t.Errorf("not fixed: %v", f)
		}
	}
	if len(r.after) != 0 {
		t.Errorf("still wrong after setting: %v", r.after)
	}
	for _, s := range Required {
		out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-n", s.Name).Output()
		if err != nil {
			t.Fatalf("sysctl -n %s: %v", s.Name, err)
		}
		if got := strings.Join(strings.Fields(string(out)), " "); got != s.Want {
			t.Errorf("%s = %q in netns, want %q", s.Name, got, s.Want)
		}
	}
}
