package route

import (
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
)

// ipIn runs "ip ARGS" inside netns ns.
func ipIn(t *testing.T, ns string, args string) string {
	t.Helper()
	return netns.Run(t, append([]string{"ip", "-n", ns}, strings.Fields(args)...)...)
}

// waitNoTentative waits until no IPv6 address of ns is tentative (its
// duplicate address detection, a second or two after its link came up, has
// ended, and with it the kernel's notifications about it).
func waitNoTentative(t *testing.T, ns string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out := ipIn(t, ns, "-6 addr show tentative")
		if strings.TrimSpace(out) == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("addresses still tentative after 10 s:\n%s", out)
		}
	}
}
