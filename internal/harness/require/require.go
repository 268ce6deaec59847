package require

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Env is the environment variable that turns missing prerequisites into
// failures. The older SLLBRD_REQUIRE_KUBE has the same effect.
const Env = "SLLBRD_REQUIRE_INTEGRATION"

// legacyEnv is what make test set before Env existed.
const legacyEnv = "SLLBRD_REQUIRE_KUBE"

// TB is the part of testing.TB the helpers use.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatalf(format string, args ...any)
}

// Strict reports whether missing prerequisites fail tests (Env is set).
func Strict() bool { return os.Getenv(Env) != "" || os.Getenv(legacyEnv) != "" }

// Missing ends the test because what is missing: a failure when Strict, else
// a skip.
func Missing(tb TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if Strict() {
		tb.Fatalf("integration prerequisite missing: %s (%s is set, so this fails instead of skipping)", msg, Env)
		return
	}
	tb.Skip(msg)
}

// Integration marks an integration test: it is skipped in -short mode
// unless Strict.
func Integration(tb TB) {
	tb.Helper()
	if testing.Short() && !Strict() {
		tb.Skip("integration test: skipped with -short")
	}
}

// Root requires an integration run as root (network namespaces, nftables,
// nfqueue, policy routes).
func Root(tb TB) {
	tb.Helper()
	Integration(tb)
	if os.Geteuid() != 0 {
		Missing(tb, "needs root (network namespaces)")
	}
}

// Programs requires each program on $PATH (e.g. "nft", "bird", "ip").
func Programs(tb TB, names ...string) {
	tb.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			Missing(tb, "needs %s on $PATH (make deps installs it): %v", n, err)
		}
	}
}

// Lab requires what the network-namespace lab needs: root, ip(8), nft(8)
// and BIRD.
func Lab(tb TB) {
	tb.Helper()
	Root(tb)
	Programs(tb, "ip", "nft", "bird", "birdc")
}
