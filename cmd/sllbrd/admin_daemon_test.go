package main

import (
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/internal/admin"
)

func TestAdminFlags(t *testing.T) {
	base := []string{"--gateway", "sllb-a"}
	cfg, err := parseFlags(base)
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.admin; a.socket != admin.DefaultSocket || a.gid != -1 || a.pprofAddress != "" || a.level == nil {
		t.Fatalf("defaults: %+v", a)
	}
	t.Setenv(envAdminSocket, "/run/other/admin.sock")
	t.Setenv(envAdminGroup, "4242")
	if cfg, err = parseFlags(base); err != nil || cfg.admin.socket != "/run/other/admin.sock" || cfg.admin.gid != 4242 {
		t.Fatalf("from the environment: %+v, %v", cfg.admin, err)
	}
	if cfg, err = parseFlags(append(base, "--admin-socket", "", "--pprof-address", "[::1]:6060")); err != nil || cfg.admin.socket != "" {
		t.Fatalf("socket off, pprof on ::1: %+v, %v", cfg.admin, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--admin-socket", "admin.sock"}, "--admin-socket \"admin.sock\": want an absolute path"},
		{[]string{"--pprof-address", ":6060"}, "--pprof-address"},
		{[]string{"--pprof-address", "10.0.0.1:6060"}, "must be a loopback address"},
		{[]string{"--admin-group", "no-such-group-sllbrd"}, "--admin-group"},
	} {
		if _, err := parseFlags(append(base, tc.args...)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}
