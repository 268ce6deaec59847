package apiserver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestHealth walks readiness through a first sync, an interruption and
// its resumption, a failed probe, and an interruption that comes while a
// resumption is being published.
func TestHealth(t *testing.T) {
	h := newHealth()
	kinds := []string{"Gateway", "Service"}
	for _, k := range kinds {
		h.register(k)
	}
	check := func(step string, want bool, contains string) {
		t.Helper()
		ok, why := h.ready()
		if ok != want || !strings.Contains(why, contains) || (ok && why != "") {
			t.Errorf("%s: ready() = %v %q, want %v containing %q", step, ok, why, want, contains)
		}
	}
	resumable := func(step string, want bool) uint64 {
		t.Helper()
		e, ok := h.resumable(kinds)
		if ok != want {
			t.Errorf("%s: resumable = %v, want %v", step, ok, want)
		}
		return e
	}
	check("start", false, "waiting for the first sync")
	h.interrupted(errors.New("forbidden"))
	check("list failed before the first sync", false, "forbidden")
	resumable("before the first sync", false)
	h.published(caughtUp(h))
	check("first sync after a failure", false, "not yet resumed (no watch of Gateway, Service) after: forbidden")
	h.streamOpened("Gateway")
	resumable("one kind without a watch stream", false)
	h.streamOpened("Service")
	e := resumable("every kind watched", true)
	h.published(caughtUp(h))
	check("published before catching up", false, "not yet resumed after: forbidden")
	h.setCaughtUp(e)
	resumable("caught up", false)
	h.published(caughtUp(h))
	check("published after catching up", true, "")

	h.probed(errors.New("connection refused"))
	check("probe failed", false, "unreachable, keeping the last state: connection refused")
	resumable("server unreachable", false)
	h.probed(nil)
	check("probe answered, watches not checked", false, "not yet resumed after: probe: connection refused")
	e = resumable("server answers", true)
	h.setCaughtUp(e)
	before := caughtUp(h)
	h.interrupted(errors.New("watch Service: too old resource version"))
	h.published(before)
	check("interrupted while publishing", false, "too old resource version")
	h.streamClosed("Service")
	resumable("a stream ended", false)
	check("a stream ended", false, "(no watch of Service)")
}

func caughtUp(h *health) uint64 {
	_, c := h.epochs()
	return c
}

// TestVersionsHeldBy: a cache holds a read when it has exactly the objects
// and versions read, or an object of the read's version or later.
func TestVersionsHeldBy(t *testing.T) {
	obj := func(name, rv string) any {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	read := versions{byKey: map[string]string{"ns/a": "10", "ns/b": "12"}, read: "20"}
	for _, tc := range []struct {
		name   string
		cached []any
		want   bool
	}{
		{"same objects and versions", []any{obj("a", "10"), obj("b", "12")}, true},
		{"an older version", []any{obj("a", "10"), obj("b", "11")}, false},
		{"an object missing", []any{obj("a", "10")}, false},
		{"an extra object", []any{obj("a", "10"), obj("b", "12"), obj("c", "5")}, false},
		{"a change after the read", []any{obj("a", "10"), obj("b", "21")}, true},
		{"a change at the read's version", []any{obj("a", "20")}, true},
		{"a version that is not a number", []any{obj("a", "x"), obj("b", "12")}, false},
	} {
		if got := read.heldBy(tc.cached); got != tc.want {
			t.Errorf("%s: heldBy = %v, want %v", tc.name, got, tc.want)
		}
	}
	empty := versions{byKey: map[string]string{}, read: "opaque"}
	if !empty.heldBy(nil) || empty.heldBy([]any{obj("a", "99")}) {
		t.Errorf("empty read: an empty cache must hold it, a non-empty one (opaque read version) must not")
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
