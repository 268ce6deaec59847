package admin

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// TestStartFailsOnOpen: a server that cannot be opened at start fails the
// start with its error.
func TestStartFailsOnOpen(t *testing.T) {
	d := NewDiagnostics(slog.New(slog.DiscardHandler))
	busy := errors.New("address already in use")
	if _, err := d.Start(ServerMetrics, func() (func(context.Context) error, error) { return nil, busy }); !errors.Is(err, busy) {
		t.Fatalf("Start = %v, want %v", err, busy)
	}
}

// TestKeptServerIsOpenedAgain: a server that stops serving with an error,
// then cannot be opened once, is opened again after backoffs and serves;
// Run returns only when its context ends. Each failure is counted and
// logged.
func TestKeptServerIsOpenedAgain(t *testing.T) {
	log, logged := logRecorder()
	d := NewDiagnostics(log)
	broken, refused := errors.New("listener broken"), errors.New("address already in use")
	var opens atomic.Int32
	serving := make(chan struct{}, 1)
	open := func() (func(context.Context) error, error) {
		switch opens.Add(1) {
		case 1: // at start: serves, then breaks
			return func(context.Context) error { return broken }, nil
		case 2:
			return nil, refused
		}
		return func(ctx context.Context) error {
			serving <- struct{}{}
			<-ctx.Done()
			return nil
		}, nil
	}
	k, err := d.Start(ServerMetrics, open)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.Run(ctx); close(done) }()
	select {
	case <-serving:
	case <-done:
		t.Fatal("Run returned while its context was live")
	case <-time.After(10 * time.Second): // backoffs of 1 s and 2 s
		t.Fatalf("not serving again 10 s after failing (%d opens)", opens.Load())
	}
	h := d.Health()
	if len(h) != 1 || !h[0].Serving || h[0].Failures != 2 || h[0].LastError != refused.Error() {
		t.Errorf("health %+v, want serving after 2 failures, the last %q", h, refused)
	}
	if errs, infos := logged.lines(slog.LevelError), logged.lines(slog.LevelInfo); len(errs) != 2 || len(infos) != 1 {
		t.Errorf("logged errors %q and infos %q, want 2 and 1", errs, infos)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return when its context ended")
	}
	if h := d.Health(); h[0].Serving {
		t.Errorf("health after the end %+v, want not serving", h)
	}
}

// TestKeptCloseReleases: Close hands the server a context that has ended,
// so that it releases what it opened.
func TestKeptCloseReleases(t *testing.T) {
	d := NewDiagnostics(slog.New(slog.DiscardHandler))
	released := false
	k, err := d.Start(ServerPprof, func() (func(context.Context) error, error) {
		return func(ctx context.Context) error {
			<-ctx.Done()
			released = true
			return nil
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	k.Close()
	if !released || d.Health()[0].Serving {
		t.Errorf("after Close: released %v, health %+v", released, d.Health())
	}
}
