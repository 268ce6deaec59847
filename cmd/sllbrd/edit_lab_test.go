package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// TestIntegrationInvalidEditKeepsLastGoodState: a manifest edit that cannot
// be parsed is reported (readiness, metric) while the last good
// configuration keeps carrying traffic; fixing the file recovers.
func TestIntegrationInvalidEditKeepsLastGoodState(t *testing.T) {
	forEachDataplane(t, testIntegrationInvalidEditKeepsLastGoodState)
}

func testIntegrationInvalidEditKeepsLastGoodState(t *testing.T, mode string) {
	l := dataplaneLab(t, 1, mode)
	dir, insts := startSllbrd(t, l, allTargets, webRoute, 1)
	o := lab.FlowOptions{VIP: vip4, Port: 5005, Count: 100, SrcPortBase: 34000}
	before := flows(t, l, o)
	good, err := os.ReadFile(filepath.Join(dir, "sllb-a.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sllb-a.yaml"), append(append([]byte{}, good...), "\n---\nkind: [unclosed\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "readiness reports the broken manifest", func() bool {
		status, body, err := insts[0].Get("/readyz")
		return err == nil && status == 503 && strings.Contains(body, "sllb-a.yaml")
	})
	if v, ok, err := insts[0].Metric(`sllbrd_config_problems{kind="source"}`); err != nil || !ok || v != 1 {
		t.Errorf(`sllbrd_config_problems{kind="source"} = %v (found %v, err %v), want 1`, v, ok, err)
	}
	if gen, _, _ := insts[0].Metric("sllbrd_config_last_applied_generation"); gen != 1 {
		t.Errorf("generation %v after a broken edit, want 1 (nothing reprogrammed)", gen)
	}
	if during := flows(t, l, o); !maps.Equal(before, during) {
		t.Errorf("%d of %d flows changed target while the manifest was broken", differing(before, during), len(before))
	}
	if err := os.WriteFile(filepath.Join(dir, "sllb-a.yaml"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "ready again after the fix", func() bool {
		status, _, err := insts[0].Get("/readyz")
		return err == nil && status == 200
	})
	if v, _, _ := insts[0].Metric(`sllbrd_config_problems{kind="source"}`); v != 0 {
		t.Errorf(`sllbrd_config_problems{kind="source"} = %v after the fix, want 0`, v)
	}
}
