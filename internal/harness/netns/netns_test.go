package netns

import (
	"net"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

func TestDoRunsInsideTheNamespace(t *testing.T) {
	ns, _ := New(t, "sllbrd-netns")
	// A fresh namespace has only lo, and it is down: the host's interfaces
	// must not be visible from fn.
	var names []string
	if err := Do(ns, func() error {
		ifs, err := net.Interfaces()
		for _, i := range ifs {
			names = append(names, i.Name)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != "lo" {
		t.Fatalf("interfaces seen inside %s: %v, want [lo]", ns, names)
	}
	if out := In(t, ns, "ip", "-o", "link"); !strings.Contains(out, "lo:") || strings.Count(out, "\n") != 1 {
		t.Fatalf("ip link inside %s: %q", ns, out)
	}
}

func TestDoReportsAMissingNamespace(t *testing.T) {
	require.Root(t)
	if err := Do("sllbrd-netns-does-not-exist", func() error { return nil }); err == nil {
		t.Fatal("Do in a missing namespace returned no error")
	}
}
