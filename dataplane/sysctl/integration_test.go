package sysctl

import (
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
)

// TestIntegrationEnsureInFreshNetns runs Ensure on a thread inside a new
// network namespace (sllbrd-k-sysctl-PID), so the host is never changed.
func TestIntegrationEnsureInFreshNetns(t *testing.T) {
	ns, _ := netns.New(t, "sllbrd-k-sysctl")
	var r struct{ before, fixed, after []Finding }
	err := netns.Do(ns, func() (err error) {
		if r.before, err = Ensure(false); err != nil {
			return err
		}
		if r.fixed, err = Ensure(true); err != nil {
			return err
		}
		r.after, err = Ensure(false)
		return err
	})
	if err != nil {
		t.Fatalf("Ensure in netns: %v", err)
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
		out := netns.In(t, ns, "sysctl", "-n", s.Name)
		if got := strings.Join(strings.Fields(out), " "); got != s.Want {
			t.Errorf("%s = %q in netns, want %q", s.Name, got, s.Want)
		}
	}
}
