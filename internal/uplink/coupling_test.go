package uplink

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/model"
)

// dampTo flaps the BGP router until its next recovery waits want, firing
// the bring-ups on the way; the last one stays pending.
func (h *harness) dampTo(t *testing.T, want time.Duration) {
	t.Helper()
	h.bfd(bgpGW, bfd.StateDown, bfd.StateUp, false)
	h.timers.fire()
	h.clock = h.clock.Add(time.Minute) // past the early-down grace
	for range 10 {
		h.flap(bgpGW, time.Second)
		p := h.timers.pending()
		if len(p) != 1 {
			t.Fatalf("%d pending bring-ups, want 1", len(p))
		}
		if p[0].delay == want {
			h.sp.takeCalls()
			return
		}
		h.timers.fire()
	}
	t.Fatalf("damping never reached %v", want)
}

// TestDampingTimerIsReplaced: a bring-up scheduled before a later failure
// must not end the later, longer damping early (one timer per peer,
// cancelled on every transition).
func TestDampingTimerIsReplaced(t *testing.T) {
	h := newHarness(t)
	h.dampTo(t, time.Second)
	older := h.timers.pending()[0]
	h.flap(bgpGW, 100*time.Millisecond)
	h.wantCalls(t, "down "+bgpGW.String())
	if !older.stopped {
		t.Fatal("the older 1 s bring-up was not cancelled by the next failure")
	}
	older.f() // had it fired just before being cancelled, it must do nothing
	h.wantCalls(t)
	if d := h.timers.fire(); !slices.Equal(d, []time.Duration{2 * time.Second}) {
		t.Fatalf("bring-ups fired %v, want the 2 s one alone", d)
	}
	h.wantCalls(t, "up "+bgpGW.String())
}

// TestRemovalCancelsDamping: a router removed, or whose BFD is switched
// off, loses its pending bring-up and its BFD session; events of the old
// session are ignored; re-created, it starts without damping.
func TestRemovalCancelsDamping(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func() []model.Router
	}{
		{"router removed", func() []model.Router { return routers()[1:] }},
		{"BFD switched off", func() []model.Router { r := routers(); r[0].BFD.Enabled = false; return r }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.dampTo(t, time.Second)
			pending := h.timers.pending()[0]
			oldKey := bfd.Key{Peer: bgpGW, Interface: "vlan-100"}
			oldSession, _ := h.u.BFD().Stats(oldKey)
			if err := h.u.Apply(context.Background(), tc.change()); err != nil {
				t.Fatal(err)
			}
			if !pending.stopped {
				t.Fatal("pending bring-up not cancelled")
			}
			if _, ok := h.u.BFD().Stats(oldKey); ok {
				t.Fatal("BFD session still configured")
			}
			h.u.onBFD(bfd.Event{Key: oldKey, LocalDiscriminator: oldSession.LocalDiscriminator,
				Transition: bfd.Transition{Old: bfd.StateUp, New: bfd.StateDown}})
			h.wantCalls(t)
			if err := h.u.Apply(context.Background(), routers()); err != nil {
				t.Fatal(err)
			}
			h.flap(bgpGW, time.Second) // Up first: no failure
			h.clock = h.clock.Add(time.Minute)
			h.flap(bgpGW, time.Second)
			if p := h.timers.pending(); len(p) != 1 || p[0].delay != 0 {
				t.Fatalf("re-created router: bring-up %+v, want one at once (no damping history)", p)
			}
		})
	}
}

// TestShutdownCancelsDamping: Shutdown cancels the pending bring-ups, and
// BFD changes after it (our own AdminDown) are not acted upon.
func TestShutdownCancelsDamping(t *testing.T) {
	h := newHarness(t)
	h.dampTo(t, time.Second)
	pending := h.timers.pending()[0]
	if err := h.u.Shutdown(context.Background(), 0); err != nil && !errors.Is(err, bfd.ErrNotRunning) {
		t.Fatal(err)
	}
	if !pending.stopped {
		t.Fatal("pending bring-up not cancelled by Shutdown")
	}
	pending.f()
	h.bfd(bgpGW, bfd.StateUp, bfd.StateAdminDown, false)
	h.wantCalls(t)
}

// TestEarlyDownIsNotDamped: a BFD Down soon after the session came Up, or
// soon after BGP became established (FRR re-registering its BFD session),
// does not count for damping, once per DampingWindow.
func TestEarlyDownIsNotDamped(t *testing.T) {
	delays := func(h *harness) time.Duration {
		t.Helper()
		p := h.timers.pending()
		if len(p) != 1 {
			t.Fatalf("%d pending bring-ups, want 1", len(p))
		}
		h.timers.fire()
		return p[0].delay
	}
	t.Run("after BFD up", func(t *testing.T) {
		h := newHarness(t)
		h.bfd(bgpGW, bfd.StateDown, bfd.StateUp, false)
		h.timers.fire()
		h.clock = h.clock.Add(2 * time.Second)
		h.flap(bgpGW, time.Second) // the start-up flap
		h.wantCalls(t, "up "+bgpGW.String(), "down "+bgpGW.String())
		if d := delays(h); d != 0 {
			t.Fatalf("after the start-up flap: delay %v", d)
		}
		h.clock = h.clock.Add(30 * time.Second)
		h.flap(bgpGW, time.Second) // the first real failure
		if d := delays(h); d != 0 {
			t.Fatalf("first real failure after a start-up flap: delay %v, want 0 (the flap is not counted)", d)
		}
		h.clock = h.clock.Add(2 * time.Second)
		h.flap(bgpGW, time.Second) // early again, but the grace was used in this window
		if d := delays(h); d != time.Second {
			t.Fatalf("second early Down in the window: delay %v, want 1 s", d)
		}
	})
	t.Run("after BGP established", func(t *testing.T) {
		h := newHarness(t)
		h.bfd(bgpGW, bfd.StateDown, bfd.StateUp, false)
		h.timers.fire()
		h.clock = h.clock.Add(40 * time.Second)
		h.sp.established[bgpGW] = h.clock // BGP came up long after BFD
		h.clock = h.clock.Add(3 * time.Second)
		h.flap(bgpGW, time.Second)
		delays(h)
		h.clock = h.clock.Add(30 * time.Second)
		delete(h.sp.established, bgpGW)
		h.flap(bgpGW, time.Second)
		if d := delays(h); d != 0 {
			t.Fatalf("first real failure: delay %v, want 0 (the Down right after establishment is not counted)", d)
		}
	})
}

// TestStaticRouterTurnedBGPComesUp: a static router whose BFD session is
// Up, changed into a BGP router with the same session, gets its BGP
// bring-up at once (no BFD event will come for it); a router that keeps
// BGP across an Apply gets none.
func TestStaticRouterTurnedBGPComesUp(t *testing.T) {
	h := newHarness(t)
	h.bfd(staticGW, bfd.StateDown, bfd.StateUp, false)
	h.bfd(bgpGW, bfd.StateDown, bfd.StateUp, false)
	h.timers.fire()
	h.sp.takeCalls()
	turned := routers()
	turned[1].BGP = &model.BGP{LocalASN: 8103, RemoteASN: 4248829953}
	if err := h.u.Apply(context.Background(), turned); err != nil {
		t.Fatal(err)
	}
	if d := h.timers.fire(); !slices.Equal(d, []time.Duration{0}) {
		t.Fatalf("bring-ups after the change %v, want one at once", d)
	}
	h.wantCalls(t, "up "+staticGW.String())
	if err := h.u.Apply(context.Background(), turned); err != nil {
		t.Fatal(err)
	}
	if d := h.timers.fire(); len(d) != 0 {
		t.Fatalf("bring-ups after an unchanged Apply: %v, want none", d)
	}
	h.wantCalls(t)
}
