package manifest

import "time"

// MaxDelayCap bounds how far a source's maximum debounce delay widens under
// a long burst of changes.
const MaxDelayCap = time.Second

// Window is the maximum delay of a source's debounce, widening under
// bursts. A burst of changes is published once it goes quiet, at the latest
// Max() after its first change. A burst that ended by going quiet resets
// Max to its base; one still going when Max ran out doubles it, up to
// MaxDelayCap. A single change is published after the quiet period; a
// stream of changes lasting T is published about log2(T/base) times while
// T is below the cap, then once per cap, instead of once per base.
type Window struct {
	base, cur time.Duration
}

// NewWindow returns a Window whose maximum delay starts at base.
func NewWindow(base time.Duration) *Window { return &Window{base: base, cur: base} }

// Max is the current maximum delay.
func (w *Window) Max() time.Duration { return w.cur }

// Ended records how the last burst ended: cut by Max (still going) or quiet.
func (w *Window) Ended(cut bool) {
	if cut {
		w.cur = min(2*w.cur, max(MaxDelayCap, w.base))
		return
	}
	w.cur = w.base
}
