package manifest

import (
	"encoding/binary"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// rawEvent encodes one struct inotify_event with its name padded to 16
// bytes, as the kernel does.
func rawEvent(wd int32, mask uint32, name string) []byte {
	n := 0
	if name != "" {
		n = (len(name) + 1 + 15) / 16 * 16
	}
	b := make([]byte, unix.SizeofInotifyEvent+n)
	binary.NativeEndian.PutUint32(b[0:], uint32(wd))
	binary.NativeEndian.PutUint32(b[4:], mask)
	binary.NativeEndian.PutUint32(b[12:], uint32(n))
	copy(b[unix.SizeofInotifyEvent:], name)
	return b
}

func TestParseEvents(t *testing.T) {
	var buf []byte
	buf = append(buf, rawEvent(1, unix.IN_MOVED_TO, "..data")...)
	buf = append(buf, rawEvent(2, unix.IN_MODIFY, "")...)
	buf = append(buf, rawEvent(-1, unix.IN_Q_OVERFLOW, "")...)
	buf = append(buf, rawEvent(1, unix.IN_CLOSE_WRITE, "a-long-file-name.yaml")...)
	buf = append(buf, 1, 2, 3) // a truncated header is ignored
	events, overflow := parseEvents(buf)
	want := []fsEvent{{1, unix.IN_MOVED_TO, "..data"}, {2, unix.IN_MODIFY, ""}, {1, unix.IN_CLOSE_WRITE, "a-long-file-name.yaml"}}
	if !overflow || len(events) != len(want) {
		t.Fatalf("parseEvents = %+v, overflow %v; want %+v and an overflow", events, overflow, want)
	}
	for i := range want {
		if events[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, events[i], want[i])
		}
	}
}

func TestBurstDue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	b := newBurst(5*time.Millisecond, 50*time.Millisecond)
	if _, ok := b.due(); ok {
		t.Fatal("due without events")
	}
	b.event(ms(0), unix.IN_MOVED_TO, "")
	b.event(ms(3), unix.IN_MOVED_TO, "")
	if due, _ := b.due(); !due.Equal(ms(8)) {
		t.Errorf("quiet: due %v, want +8ms", due.Sub(t0))
	}
	for i := 4; i < 100; i += 4 {
		b.event(ms(i), unix.IN_MOVED_TO, "")
	}
	if due, _ := b.due(); !due.Equal(ms(50)) {
		t.Errorf("endless burst: due %v, want the maximum delay, +50ms", due.Sub(t0))
	}
	b.read(ms(100))
	b.event(ms(200), unix.IN_MODIFY, "/m/a.yaml")
	if due, _ := b.due(); !due.Equal(ms(1200)) {
		t.Errorf("writer open: due %v, want +1200ms (its last write + writeWait)", due.Sub(t0))
	}
	b.event(ms(260), unix.IN_CLOSE_WRITE, "/m/a.yaml")
	// The endless burst was cut by the maximum delay, which doubled to
	// 100ms, but this burst began after a 100ms pause: back at 50ms.
	if due, _ := b.due(); !due.Equal(ms(250)) {
		t.Errorf("writer closed: due %v, want +250ms (the maximum delay, back at its base)", due.Sub(t0))
	}
	b.read(ms(265)) // cut again (events until 260): 100ms
	for i := 275; i < 400; i += 4 {
		b.event(ms(i), unix.IN_MOVED_TO, "")
	}
	if due, _ := b.due(); !due.Equal(ms(375)) {
		t.Errorf("burst 10ms after a cut one: due %v, want +375ms (the widened 100ms maximum delay)", due.Sub(t0))
	}
	b.read(ms(399))
	b.event(ms(400), unix.IN_MODIFY, "/m/b.yaml") // a writer that never closes
	b.read(ms(1500))
	if len(b.writing) != 0 {
		t.Errorf("a writer silent for writeWait is still tracked: %v", b.writing)
	}
}

// TestFollowerConfirmsPolledChanges: without inotify events, a change is
// applied only when two reads agree; an overflow makes a read due.
func TestFollowerConfirmsPolledChanges(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "all.yaml"), manifests(1))
	var got []Update
	src := NewFileSource(dir, "sllb-a", WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	f := &follower{src: src, emit: func(u Update) { got = append(got, u) }, burst: newBurst(src.quiet, src.max)}
	f.read(time.Now(), false)
	if len(got) != 1 || got[0].State.Routes[0].Priority != 1 {
		t.Fatalf("first read: %d updates, want one at once", len(got))
	}
	write(t, filepath.Join(dir, "all.yaml"), manifests(2))
	f.read(time.Now(), false)
	if len(got) != 1 {
		t.Fatalf("a change seen by one poll was applied")
	}
	if due, ok := f.due(); !ok || time.Until(due) > src.recheck() {
		t.Fatalf("no re-read scheduled within %v", src.recheck())
	}
	f.timeout(f.recheckAt)
	if len(got) != 2 || got[1].State.Routes[0].Priority != 2 {
		t.Fatalf("after the second read: %d updates, want the change applied", len(got))
	}
	if _, ok := f.due(); ok {
		t.Errorf("a read is due after the change was applied")
	}
	f.observe(fsBatch{at: time.Now(), overflow: true})
	if _, ok := f.due(); !ok {
		t.Errorf("no read due after an overflow")
	}
}
