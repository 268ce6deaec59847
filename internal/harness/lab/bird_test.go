package lab

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBIRDConfigRender(t *testing.T) {
	v4, v6 := netip.MustParseAddr("169.254.100.1"), netip.MustParseAddr("fd00:169::1")
	tests := []struct {
		name    string
		cfg     BIRDConfig
		want    []string
		notWant []string
	}{
		{
			name: "defaults",
			cfg:  BIRDConfig{Neighbors: []netip.Addr{v4, v6}},
			want: []string{
				"router id 169.254.100.150;", "merge paths on;",
				"protocol bgp nb_169_254_100_1 {", "local port 10179 as 4248829953;",
				"neighbor 169.254.100.1 port 10179 as 8103;", "if net.len = 32 then accept;",
				"protocol bgp nb_fd00_169__1 {", "neighbor fd00:169::1 port 10179 as 8103;",
				"if net.len = 128 then accept;", "route 0.0.0.0/0 blackhole;", "if net = ::/0 then accept;",
				"hold time 24;",
			},
			notWant: []string{"bfd"},
		},
		{
			name: "bfd and custom AS",
			cfg: BIRDConfig{Neighbors: []netip.Addr{v4}, LocalAS: 65000, PeerAS: 65001, Port: 179,
				HoldTime: 3 * time.Second, BFD: &BFDConfig{MinRx: 300 * time.Millisecond, MinTx: 300 * time.Millisecond, Multiplier: 5}},
			want: []string{"local port 179 as 65000;", "neighbor 169.254.100.1 port 179 as 65001;", "bfd on;",
				"min rx interval 300 ms;", "multiplier 5;", `interface "vlan-100"`, "hold time 3;"},
			notWant: []string{"nb_fd00"},
		},
		{
			name: "multihop BFD only, BGP without BFD",
			cfg: BIRDConfig{Neighbors: []netip.Addr{v4, v6}, BFDNeighbors: []netip.Addr{v4, v6}, BFDMultihop: true, BGPWithoutBFD: true,
				BFD: &BFDConfig{MinRx: 300 * time.Millisecond, MinTx: 300 * time.Millisecond, Multiplier: 3}},
			want: []string{"neighbor 169.254.100.1 local 169.254.100.150 multihop on;",
				"neighbor fd00:169::1 local fd00:169::150 multihop on;", "multihop {", "multiplier 3;"},
			notWant: []string{"bfd on;"},
		},
		{
			name:    "password, GTSM two hops away, no default",
			cfg:     BIRDConfig{Neighbors: []netip.Addr{v4}, Password: "md5 key", TTLSecurity: true, Multihop: 2, NoDefault: true},
			want:    []string{`password "md5 key";`, "ttl security on;", "multihop 2;", "export none;"},
			notWant: []string{"direct;", "if net = 0.0.0.0/0 then accept;"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.cfg.Render()
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("config lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("config has %q:\n%s", w, got)
				}
			}
			checkBIRDParses(t, got)
		})
	}
}

// checkBIRDParses runs `bird -p` (parse only) when bird is installed.
func checkBIRDParses(t *testing.T, cfg string) {
	t.Helper()
	if _, err := exec.LookPath("bird"); err != nil {
		t.Log("bird not installed: config not parsed")
		return
	}
	path := filepath.Join(t.TempDir(), "bird.conf")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(context.Background(), "bird", "-p", "-c", path); err != nil {
		t.Errorf("bird rejects the config: %v\n%s", err, cfg)
	}
}
