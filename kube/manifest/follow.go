package manifest

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"time"

	"github.com/sllbrd/sllbrd/kube/translate"
	"github.com/sllbrd/sllbrd/model"
)

// follower is the state of one FileSource.Run: what was read and applied,
// and the events not yet accounted for by a read.
type follower struct {
	src   *FileSource
	emit  func(Update)
	in    *inotify // nil: polling only
	burst *burst
	pub   Publisher

	applied    [sha256.Size]byte // content last applied (or reported unusable)
	hasApplied bool
	// suspect is content read once that needs a second, identical read
	// before it is applied: a failure (perhaps a write in progress) or a
	// change found without an event (polling).
	suspect          [sha256.Size]byte
	suspectSince     time.Time // observed time of the change it reflects
	recheckAt        time.Time // zero: no suspect
	lastWatchFailure string
}

// observe accounts for one batch of inotify events.
func (f *follower) observe(b fsBatch) {
	if b.overflow {
		f.src.log.Info("inotify queue overflowed; reading all manifests again")
		f.burst.touch(b.at)
	}
	for _, ev := range b.events {
		subject, ok := f.in.about(ev)
		if !ok {
			continue
		}
		if !f.src.isManifestFile(subject) {
			subject = ""
		}
		f.burst.event(b.at, ev.mask, subject)
	}
}

// due returns when the next read is due, if one is.
func (f *follower) due() (time.Time, bool) {
	due, ok := f.burst.due()
	if !f.recheckAt.IsZero() && (!ok || f.recheckAt.Before(due)) {
		return f.recheckAt, true
	}
	return due, ok
}

// timeout reads what is due at now: the files after a burst of events, or
// a suspect content again.
func (f *follower) timeout(now time.Time) {
	if due, ok := f.burst.due(); ok && !now.Before(due) {
		observed := f.burst.first
		f.burst.read(now)
		f.read(observed, true)
		return
	}
	if !f.recheckAt.IsZero() && !now.Before(f.recheckAt) {
		f.read(f.suspectSince, false)
	}
}

// read reads the manifests, re-arms the watches on what the path now
// names, and applies the content when it is new and either confirmed (read
// after inotify events and usable) or read twice alike. observed is when
// the change was first seen.
func (f *follower) read(observed time.Time, confirmed bool) {
	files, readErr := readPath(f.src.path)
	f.watch(files)
	hash := contentHash(files)
	if readErr != nil {
		hash = sha256.Sum256([]byte(readErr.Error()))
	}
	if f.hasApplied && hash == f.applied {
		f.recheckAt = time.Time{}
		return
	}
	first := !f.hasApplied
	again := !f.recheckAt.IsZero() && hash == f.suspect
	var state *model.State
	var problems []translate.Problem
	var err error
	if confirmed || again || first {
		state, problems, err = f.src.load(files, readErr)
	}
	if !first && !again && (!confirmed || err != nil) {
		if f.recheckAt.IsZero() || hash != f.suspect {
			f.suspectSince = observed
		}
		f.suspect, f.recheckAt = hash, time.Now().Add(f.src.recheck())
		f.src.log.Debug("manifests changed; reading them again before using them", "err", err)
		return
	}
	if again {
		observed = f.suspectSince
	}
	f.recheckAt = time.Time{}
	f.applied, f.hasApplied = hash, true
	if u, changed := f.pub.Apply(state, problems, err); changed {
		u.Observed = observed
		f.emit(u)
	}
}

// watch points the watches at what the path names now.
func (f *follower) watch(files []file) {
	if f.in == nil {
		return
	}
	err := f.in.sync(watchSpecs(f.src.path, files))
	if msg := errText(err); msg != f.lastWatchFailure {
		f.lastWatchFailure = msg
		if err != nil {
			f.src.log.Warn("manifest changes may be seen late (at the next poll)", "err", err)
		}
	}
}

// watchSpecs returns the watches that see every change of the manifests at
// path: for a directory, the directory, each manifest in it (through
// symbolic links, so an edit of a link's target is seen) and the directory's
// entry in its parent (deleted, re-created, replaced); for a file, the file
// and its directory (where editors and ConfigMap mounts rename); for a
// missing path, the entry that leads to it in its nearest existing ancestor.
func watchSpecs(path string, files []file) []watchSpec {
	info, err := os.Stat(path)
	switch {
	case err != nil:
		for dir := path; ; {
			parent := filepath.Dir(dir)
			if _, err := os.Stat(parent); err == nil || parent == dir {
				return []watchSpec{{path: parent, only: filepath.Base(dir)}}
			}
			dir = parent
		}
	case info.IsDir():
		specs := []watchSpec{{path: filepath.Dir(path), only: filepath.Base(path)}, {path: path}}
		for _, f := range files {
			specs = append(specs, watchSpec{path: f.name})
		}
		return specs
	default:
		return []watchSpec{{path: filepath.Dir(path)}, {path: path}}
	}
}
