package targetbfd

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/targetnet"
)

// A Runner whose namespace cannot be entered counts the failure, tries
// again, and returns only when its context ends; its file is closed.
func TestRunnerCountsAServerThatCannotStart(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "not-a-namespace"))
	if err != nil {
		t.Fatal(err)
	}
	c := NewCounters()
	r := NewRunner(f, WithCounters(c), WithLogger(slog.New(slog.DiscardHandler)))
	r.Set([]Gateway{gateway("sllb-a", time.Second, 3, "169.111.100.1")})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for end := time.Now().Add(10 * time.Second); c.Stats().ServerFailures < 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("no server failure counted")
		}
	}
	if s := r.Stats(); s.Sessions[bfd.StateDown] != 0 || r.Sessions() != nil {
		t.Errorf("sessions without a server: %+v", s)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return when its context ended")
	}
	if _, err := f.Stat(); err == nil {
		t.Error("the namespace's file is still open")
	}
}

// Next hops without an interface are counted, and get no session, so the
// server opens no socket (this test runs in the caller's namespace).
func TestRunnerCountsUnservedNextHops(t *testing.T) {
	c := NewCounters()
	r := NewRunner(nil, WithCounters(c), WithLogger(slog.New(slog.DiscardHandler)))
	g := gateway("sllb-a", time.Second, 3, "169.111.100.1", "fd00:111::1")
	g.Interfaces = map[targetnet.Family]string{}
	r.Set([]Gateway{g})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for end := time.Now().Add(10 * time.Second); r.Stats().Unserved != 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("stats %+v, want 2 unserved next hops", r.Stats())
		}
	}
	s := r.Stats()
	if len(s.Sessions) != 4 || s.Sessions[bfd.StateDown]+s.Sessions[bfd.StateUp] != 0 || s.ServerFailures != 0 || len(r.Sessions()) != 0 {
		t.Errorf("stats %+v, sessions %v", s, r.Sessions())
	}
	r.Set(nil)
	for end := time.Now().Add(10 * time.Second); r.Stats().Unserved != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("next hops still unserved with no Gateway")
		}
	}
	cancel()
	<-done
}
