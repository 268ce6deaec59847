package manifest

import (
	"time"

	"golang.org/x/sys/unix"
)

// writeWait bounds how long a manifest file that was modified and not yet
// closed holds a read back (a writer that keeps the file open).
const writeWait = time.Second

// burst collects the file-system events since the last read and says when
// to read: once no event came for the quiet period, at the latest the
// window's maximum delay after the first event (it widens while events keep
// coming, see Window), but not while a manifest file is still being written
// (modified and not closed, for up to writeWait), so a file is not read
// half-written.
type burst struct {
	quiet       time.Duration
	window      *Window
	pending     bool
	first, last time.Time
	writing     map[string]time.Time // manifest file -> its last modification
}

func newBurst(quiet, max time.Duration) *burst {
	return &burst{quiet: quiet, window: NewWindow(max), writing: map[string]time.Time{}}
}

// touch records that something may have changed at at.
func (b *burst) touch(at time.Time) {
	if !b.pending {
		b.pending, b.first = true, at
		b.window.Begin(at)
	}
	b.last = at
}

// event records an inotify event at at; file is the manifest file it is
// about ("" when it is about anything else, e.g. a temporary file or the
// "..data" link of a ConfigMap mount).
func (b *burst) event(at time.Time, mask uint32, file string) {
	b.touch(at)
	if file == "" {
		return
	}
	switch {
	case mask&unix.IN_MODIFY != 0:
		b.writing[file] = at
	case mask&(unix.IN_CLOSE_WRITE|unix.IN_DELETE|unix.IN_MOVED_FROM|
		unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0:
		delete(b.writing, file)
	}
}

// due returns when to read, if something is pending.
func (b *burst) due() (time.Time, bool) {
	if !b.pending {
		return time.Time{}, false
	}
	due := b.last.Add(b.quiet)
	if deadline := b.first.Add(b.window.Max()); deadline.Before(due) {
		due = deadline
	}
	for _, modified := range b.writing { // the writer's close event comes first
		due = later(due, modified.Add(writeWait))
	}
	return due, true
}

// read records that the files were read at now: what happened before is
// accounted for. Writers silent for writeWait are forgotten.
func (b *burst) read(now time.Time) {
	if b.pending { // cut: the maximum delay ran out while events still came
		b.window.End(now, b.last.Add(b.quiet).After(b.first.Add(b.window.Max())))
	}
	b.pending = false
	for file, modified := range b.writing {
		if now.Sub(modified) >= writeWait {
			delete(b.writing, file)
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
