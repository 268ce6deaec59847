package cri

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestEndpoints(t *testing.T) {
	long := "/" + strings.Repeat("d", maxSocketPath)
	for _, tc := range []struct {
		endpoint, want, err string
	}{
		{"unix:///run/containerd/containerd.sock", "/run/containerd/containerd.sock", ""},
		{"/run/containerd/containerd.sock", "/run/containerd/containerd.sock", ""},
		{"unix:///var/run/crio/crio.sock", "/var/run/crio/crio.sock", ""},
		{"", "", "empty"},
		{"tcp://127.0.0.1:1234", "", `scheme "tcp"`},
		{"npipe:////./pipe/containerd-containerd", "", `scheme "npipe"`},
		{"unix://run/containerd/containerd.sock", "", "three slashes"},
		{"unix:///run/x.sock?timeout=1", "", "query"},
		{"unix://user@/run/x.sock", "", "three slashes"},
		{"run/containerd/containerd.sock", "", "absolute"},
		{"unix:relative.sock", "", "absolute"},
		{"/run/../run/containerd/containerd.sock", "", "not clean"},
		{"/run/containerd/", "", "not clean"},
		{"unix:///run//x.sock", "", "not clean"},
		{long, "", "too long"},
		{"unix://%zz", "", "invalid URL escape"},
	} {
		got, err := socketPath(tc.endpoint)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("socketPath(%q) = %q, %v; want %q", tc.endpoint, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("socketPath(%q) = %q, %v; want an error saying %q", tc.endpoint, got, err, tc.err)
		}
		if c, err := Dial(tc.endpoint); err == nil {
			c.Close()
			t.Errorf("Dial(%q) accepted it", tc.endpoint)
		}
	}
}

func TestVersion(t *testing.T) {
	c := dialFake(t, &fakeRuntime{})
	got, err := c.Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := "fake 9.9.9 (CRI v1)"; got != want {
		t.Errorf("Version = %q, want %q", got, want)
	}
}

// A wrong socket fails at once, which is what Version at start is for.
func TestVersionWithoutRuntime(t *testing.T) {
	c, err := Dial(filepath.Join(t.TempDir(), "none.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, err = c.Version(context.Background())
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "none.sock") {
		t.Errorf("Version = %v, want Unavailable naming the socket", err)
	}
	if d := time.Since(start); d > callTimeout/2 {
		t.Errorf("took %v: want a fast failure", d)
	}
}

// A runtime that hangs does not hang the caller: every call is bounded.
func TestHungRuntimeTimesOut(t *testing.T) {
	f := &fakeRuntime{hang: true, sandboxes: []fakeSandbox{ready("s1", "uid-1", 1, "/run/netns/cni-1")}}
	c := dialFake(t, f)
	c.timeout = 300 * time.Millisecond
	calls := map[string]func(context.Context) error{
		"Version":  func(ctx context.Context) error { _, err := c.Version(ctx); return err },
		"PodNetNS": func(ctx context.Context) error { _, err := c.PodNetNS(ctx, "uid-1"); return err },
	}
	for name, call := range calls {
		start := time.Now()
		err := call(context.Background())
		d := time.Since(start)
		if status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("%s = %v, want DeadlineExceeded", name, err)
		}
		if d < c.timeout || d > c.timeout+5*time.Second {
			t.Errorf("%s returned after %v, want about %v", name, d, c.timeout)
		}
		if errors.Is(err, ErrNoSandbox) || errors.Is(err, ErrHostNetwork) {
			t.Errorf("%s: a timeout reads as %v", name, err)
		}
	}
	// The caller's own deadline, when shorter, wins.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	c.timeout = time.Minute
	start := time.Now()
	if _, err := c.PodNetNS(ctx, "uid-1"); status.Code(err) != codes.DeadlineExceeded || time.Since(start) > 10*time.Second {
		t.Errorf("PodNetNS with a 50 ms context = %v after %v", err, time.Since(start))
	}
}

func TestCallsAfterClose(t *testing.T) {
	f := &fakeRuntime{}
	c, err := Dial(f.serve(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Version(context.Background()); err == nil {
		t.Error("Version after Close succeeded")
	}
}
