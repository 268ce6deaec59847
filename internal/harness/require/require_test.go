package require

import (
	"fmt"
	"testing"
)

type recorder struct {
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skip(args ...any)                  { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestMissingFailsWhenStrict(t *testing.T) {
	t.Setenv(Env, "1")
	var r recorder
	Missing(&r, "needs %s", "bird")
	if r.failed == "" || r.skipped != "" {
		t.Fatalf("strict: failed %q skipped %q, want a failure", r.failed, r.skipped)
	}
}

func TestMissingSkipsOtherwise(t *testing.T) {
	t.Setenv(Env, "")
	t.Setenv(legacyEnv, "")
	var r recorder
	Missing(&r, "needs %s", "bird")
	if r.skipped != "needs bird" || r.failed != "" {
		t.Fatalf("lenient: failed %q skipped %q, want a skip", r.failed, r.skipped)
	}
}

func TestProgramsReportsTheMissingOne(t *testing.T) {
	t.Setenv(Env, "1")
	var r recorder
	Programs(&r, "sh", "sllbrd-no-such-program")
	if r.failed == "" {
		t.Fatal("a missing program did not fail a strict run")
	}
}
