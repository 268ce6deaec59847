package route

import (
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
)

// ipIn runs "ip ARGS" inside netns ns.
func ipIn(t *testing.T, ns string, args string) string {
	t.Helper()
	return netns.Run(t, append([]string{"ip", "-n", ns}, strings.Fields(args)...)...)
}
