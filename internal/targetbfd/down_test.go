package targetbfd

import (
	"log/slog"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/targetnet"
)

// signalled reports whether DownChanged holds a value, and takes it.
func signalled(r *Runner) bool {
	select {
	case <-r.DownChanged():
		return true
	default:
		return false
	}
}

// TestRunnerDown: Down follows the sessions' events and the clock (a fake
// one here, and no server: the sessions as the Runner records them), and
// DownChanged is signalled when the set changes, not when only the cause
// does.
func TestRunnerDown(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	clock := t0
	r := NewRunner(nil, WithLogger(slog.New(slog.DiscardHandler)))
	r.now = func() time.Time { return clock }
	a, b := key("169.111.100.1", "net1"), key("fd00:111::1", "net1")
	r.hmu.Lock()
	r.health.set(a, 1, detection, t0)
	r.health.set(b, 2, detection, t0)
	r.hmu.Unlock()
	if next := r.evaluate(); !next.Equal(t0.Add(detection+bfd.UpSlack)) || signalled(r) || len(r.Down()) != 0 {
		t.Fatalf("in the grace: next %v, down %v", next.Sub(t0), r.Down())
	}
	r.onEvent(bfd.Event{Key: a, LocalDiscriminator: 1, Transition: bfd.Transition{Old: bfd.StateInit, New: bfd.StateUp}})
	if signalled(r) {
		t.Error("a Up in its grace: signalled, nothing changed")
	}
	clock = t0.Add(detection + bfd.UpSlack)
	if next := r.evaluate(); !next.IsZero() || !signalled(r) || !slices.Equal(r.Down(), []netip.Addr{b.Peer}) {
		t.Fatalf("grace over: next %v, down %v, want b", next, r.Down())
	}
	r.onEvent(bfd.Event{Key: a, LocalDiscriminator: 1, Transition: bfd.Transition{Old: bfd.StateUp, New: bfd.StateDown}})
	if !signalled(r) || !slices.Equal(r.Down(), []netip.Addr{a.Peer, b.Peer}) {
		t.Fatalf("a down: down %v, want both", r.Down())
	}
	r.onEvent(bfd.Event{Key: b, LocalDiscriminator: 2, Transition: bfd.Transition{Old: bfd.StateInit, New: bfd.StateDown, PeerAdminDown: true}})
	if signalled(r) {
		t.Error("only b's cause changed: signalled")
	}
	r.onEvent(bfd.Event{Key: a, LocalDiscriminator: 1, Transition: bfd.Transition{Old: bfd.StateInit, New: bfd.StateUp}})
	if !signalled(r) || !slices.Equal(r.Down(), []netip.Addr{b.Peer}) {
		t.Fatalf("a Up again: down %v, want b", r.Down())
	}
	if s := r.Stats(); s.Up != 2 || s.Down != 1 {
		t.Errorf("transitions %d up, %d down, want 2 and 1", s.Up, s.Down)
	}
}

// TestRunnerCountsAllDown: the next hops left out are a gauge of the
// Gateways last Set; a family whose next hops are all down (all kept) is
// counted each time that begins, not at every sync.
func TestRunnerCountsAllDown(t *testing.T) {
	c := NewCounters()
	r := NewRunner(nil, WithLogger(slog.New(slog.DiscardHandler)), WithCounters(c))
	g := gateway("sllb-a", 100*time.Millisecond, 3, "169.111.100.1", "fd00:111::1", "fd00:111::2")
	g.Down = []netip.Addr{ip("169.111.100.2")}
	allDown := g
	allDown.AllDown = []targetnet.Family{targetnet.IPv6}
	steps := []struct {
		name    string
		gws     []Gateway
		leftOut int
		count   uint64
	}{
		{"one left out", []Gateway{g}, 1, 0},
		{"IPv6 all down", []Gateway{allDown}, 1, 1},
		{"still", []Gateway{allDown}, 1, 1},
		{"not any more", []Gateway{g}, 1, 1},
		{"all down again", []Gateway{allDown}, 1, 2},
		{"none", nil, 0, 2},
	}
	var prev []Gateway
	for _, s := range steps {
		r.Set(s.gws)
		r.logRoutes(prev, s.gws)
		prev = s.gws
		if st := r.Stats(); st.LeftOut != s.leftOut || st.AllDown != s.count {
			t.Errorf("%s: %d left out, all down counted %d; want %d and %d", s.name, st.LeftOut, st.AllDown, s.leftOut, s.count)
		}
	}
}
