package apiserver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestHealth(t *testing.T) {
	var h health
	steps := []struct {
		do       func()
		want     bool
		contains string
	}{
		{func() {}, false, "waiting for the first sync"},
		{func() { h.watchFailed(errors.New("forbidden")) }, false, "forbidden"},
		{h.setSynced, true, ""},
		{func() { h.probed(errors.New("connection refused")) }, false, "unreachable, keeping the last state: connection refused"},
		{func() { h.probed(nil) }, true, ""},
	}
	for i, s := range steps {
		s.do()
		ok, why := h.ready()
		if ok != s.want || !strings.Contains(why, s.contains) || (ok && why != "") {
			t.Errorf("step %d: ready() = %v %q, want %v containing %q", i, ok, why, s.want, s.contains)
		}
	}
}

func TestNewSourceRejectsEmptyNames(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	for _, tc := range []struct{ ns, gw string }{{"", "gw"}, {"ns", ""}} {
		if _, err := NewSource(cfg, tc.ns, tc.gw); err == nil {
			t.Errorf("NewSource(%q, %q) accepted", tc.ns, tc.gw)
		}
	}
	s, err := NewSource(cfg, "ns", "gw")
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Ready(); ok {
		t.Errorf("a source that never ran is ready")
	}
}

// TestWaitForBurst checks that a burst that never goes quiet still ends at
// the maximum delay, that the burst's signals are consumed, and that a done
// context ends the wait.
func TestWaitForBurst(t *testing.T) {
	s := &Source{debounce: time.Hour, maxDelay: 50 * time.Millisecond}
	changed := make(chan struct{}, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a burst that never ends
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				signal(changed)
			}
		}
	}()
	done := make(chan bool, 1)
	go func() { done <- s.waitForBurst(context.Background(), changed) }()
	select {
	case ok := <-done:
		if !ok {
			t.Errorf("waitForBurst = false with a live context")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("an endless burst was never cut by the maximum delay")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s.waitForBurst(ctx, make(chan struct{})) {
		t.Errorf("waitForBurst = true with a done context")
	}
}
