package manifest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// watchMask is what every watch asks the kernel to report: content and
// attribute changes, a writer closing, and entries created, deleted or
// renamed (editors and ConfigMap mounts replace files by rename). Reads are
// not reported (IN_ACCESS, IN_OPEN, IN_CLOSE_NOWRITE), so the source's own
// reads cause no events.
const watchMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
	unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// fsEvent is one inotify event: the watch, what happened and, for a watched
// directory, the entry's name.
type fsEvent struct {
	wd   int32
	mask uint32
	name string
}

// fsBatch is what one read of the inotify descriptor returned.
type fsBatch struct {
	at       time.Time // when the read returned
	events   []fsEvent
	overflow bool  // the kernel dropped events (IN_Q_OVERFLOW)
	err      error // the descriptor failed; no more batches follow
}

// watchSpec asks for a watch on path (symbolic links followed); only, when
// set, names the one directory entry whose events matter.
type watchSpec struct {
	path, only string
}

// inotify is one inotify instance with its watches. add/sync are called
// from one goroutine; events arrive on the channel of start.
type inotify struct {
	fd      int
	file    *os.File // owns fd; closing it ends the reader
	watches map[int32]watchSpec
	done    chan struct{}
	stopped sync.WaitGroup
}

func newInotify() (*inotify, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	// A non-blocking descriptor makes the os.File use the runtime's poller:
	// Read parks the goroutine, and Close wakes it.
	return &inotify{fd: fd, file: os.NewFile(uintptr(fd), "inotify"), watches: map[int32]watchSpec{},
		done: make(chan struct{})}, nil
}

// start reads events until close and returns their channel.
func (in *inotify) start() <-chan fsBatch {
	out := make(chan fsBatch, 1)
	in.stopped.Add(1)
	go func() {
		defer in.stopped.Done()
		buf := make([]byte, 64<<10) // room for at least 256 events with a full name
		for {
			n, err := in.file.Read(buf)
			b := fsBatch{at: time.Now(), err: err}
			if err == nil {
				b.events, b.overflow = parseEvents(buf[:n])
			} else if errors.Is(err, os.ErrClosed) {
				return
			}
			select {
			case out <- b:
			case <-in.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}

// close ends the reader and releases the descriptor and its watches.
func (in *inotify) close() error {
	close(in.done)
	err := in.file.Close()
	in.stopped.Wait()
	return err
}

// sync makes the watches those of specs: it adds each (a path that now
// names another inode gets a new watch) and removes the watches no spec
// resolves to any more. A path that vanished meanwhile is skipped (its
// parent's watch reports its return); other failures (no permission, the
// user's watch limit) skip the path too and are returned, the first one.
func (in *inotify) sync(specs []watchSpec) error {
	var failed error
	next := make(map[int32]watchSpec, len(specs))
	for _, s := range specs {
		wd, err := unix.InotifyAddWatch(in.fd, s.path, watchMask)
		if err != nil {
			if failed == nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
				failed = fmt.Errorf("inotify watch %s: %w", s.path, err)
			}
			continue
		}
		if prev, seen := next[int32(wd)]; seen && prev.only != s.only {
			s.only = "" // two specs on one inode: every event matters
		}
		next[int32(wd)] = s
	}
	for wd := range in.watches {
		if _, keep := next[wd]; !keep {
			// EINVAL: the kernel already dropped it (the inode is gone).
			_, _ = unix.InotifyRmWatch(in.fd, uint32(wd))
		}
	}
	in.watches = next
	return failed
}

// about reports whether ev concerns the manifests, and the path it is
// about: the watched path, joined with the entry's name for an event in a
// watched directory. An event of an unknown watch (one sync removed) or of
// another entry of a directory watched for one name does not concern them.
func (in *inotify) about(ev fsEvent) (string, bool) {
	w, ok := in.watches[ev.wd]
	if !ok {
		return "", false
	}
	subject := filepath.Join(w.path, ev.name)
	if ev.mask&unix.IN_IGNORED != 0 { // the kernel dropped the watch: the inode is gone
		delete(in.watches, ev.wd)
		return subject, true
	}
	return subject, w.only == "" || ev.name == w.only || ev.mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0
}

// parseEvents decodes the events of one read: a sequence of struct
// inotify_event (wd, mask, cookie, len) each followed by len bytes of
// NUL-padded name.
func parseEvents(buf []byte) (events []fsEvent, overflow bool) {
	for len(buf) >= unix.SizeofInotifyEvent {
		mask := binary.NativeEndian.Uint32(buf[4:8])
		end := unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[12:16]))
		if end > len(buf) {
			break // the kernel never splits an event; defensive
		}
		name := buf[unix.SizeofInotifyEvent:end]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if mask&unix.IN_Q_OVERFLOW != 0 {
			overflow = true
		} else {
			events = append(events, fsEvent{wd: int32(binary.NativeEndian.Uint32(buf[0:4])), mask: mask, name: string(name)})
		}
		buf = buf[end:]
	}
	return events, overflow
}
