package manifest

import "time"

// MaxDelayCap bounds how far a source's maximum debounce delay widens under
// a long burst of changes.
const MaxDelayCap = time.Second

// Window is the maximum delay of a source's debounce, widening under
// bursts. A burst of changes is published once it goes quiet, at the latest
// Max() after its first change. A burst cut by Max (changes still coming)
// doubles Max, up to MaxDelayCap; a burst that begins after a pause at least
// as long as Max since the last one was published starts again from base.
// A single change after a pause is published after the quiet period; a
// stream of changes lasting T is published about log2(T/base) times while T
// is below the cap, then once per cap, instead of once per base, even when
// the stream has short gaps.
type Window struct {
	base, cur time.Duration
	end       time.Time // when the last burst was published
}

// NewWindow returns a Window whose maximum delay starts at base.
func NewWindow(base time.Duration) *Window { return &Window{base: base, cur: base} }

// Max is the current maximum delay.
func (w *Window) Max() time.Duration { return w.cur }

// Begin records a burst's first change at at.
func (w *Window) Begin(at time.Time) {
	if at.Sub(w.end) >= w.cur {
		w.cur = w.base
	}
}

// End records that the burst was published at at, cut by Max while changes
// still came (cut) or after they went quiet.
func (w *Window) End(at time.Time, cut bool) {
	w.end = at
	if cut {
		w.cur = min(2*w.cur, max(MaxDelayCap, w.base))
	}
}
