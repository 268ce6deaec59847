package sysctl

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeProc writes values (name -> content) under a temp dir laid out like
// /proc/sys.
func fakeProc(t *testing.T, values map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, v := range values {
		p := filepath.Join(root, strings.ReplaceAll(name, ".", "/"))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func allGood() map[string]string {
	m := map[string]string{}
	for _, s := range Required {
		m[s.Name] = strings.ReplaceAll(s.Want, " ", "\t") + "\n"
	}
	return m
}

func TestEnsure(t *testing.T) {
	tests := []struct {
		name      string
		change    map[string]string
		set       bool
		want      []Finding
		wantErr   bool
		wantAfter map[string]string
	}{
		{name: "all good", want: nil},
		{name: "report only", change: map[string]string{"net.ipv4.ip_forward": "0\n", "net.ipv4.ip_local_port_range": "32768\t60999\n"},
			want:      []Finding{{"net.ipv4.ip_forward", "1", "0", false}, {"net.ipv4.ip_local_port_range", "49152 65535", "32768 60999", false}},
			wantAfter: map[string]string{"net.ipv4.ip_forward": "0\n"}},
		{name: "set", set: true, change: map[string]string{"net.ipv6.fwmark_reflect": "0\n", "net.ipv4.conf.default.rp_filter": "1\n"},
			want:      []Finding{{"net.ipv4.conf.default.rp_filter", "2", "1", true}, {"net.ipv6.fwmark_reflect", "1", "0", true}},
			wantAfter: map[string]string{"net.ipv6.fwmark_reflect": "1\n", "net.ipv4.conf.default.rp_filter": "2\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals := allGood()
			for k, v := range tt.change {
				vals[k] = v
			}
			root := fakeProc(t, vals)
			got, err := Ensure(tt.set, WithRoot(root))
			if err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("findings\n got  %v\n want %v", got, tt.want)
			}
			for name, v := range tt.wantAfter {
				b, _ := os.ReadFile(filepath.Join(root, strings.ReplaceAll(name, ".", "/")))
				if string(b) != v {
					t.Errorf("%s = %q after Ensure, want %q", name, b, v)
				}
			}
		})
	}
}

func TestEnsureUnreadableSettingDoesNotStopOthers(t *testing.T) {
	vals := allGood()
	delete(vals, "net.ipv6.fwmark_reflect")
	vals["net.ipv4.ip_forward"] = "0\n"
	root := fakeProc(t, vals)
	got, err := Ensure(true, WithRoot(root))
	if err == nil || !strings.Contains(err.Error(), "net.ipv6.fwmark_reflect") {
		t.Errorf("Ensure error = %v, want one naming net.ipv6.fwmark_reflect", err)
	}
	want := []Finding{{"net.ipv4.ip_forward", "1", "0", true}}
	if !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
}
