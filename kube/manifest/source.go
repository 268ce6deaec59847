package manifest

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/sllbrd/sllbrd/kube/translate"
	"github.com/sllbrd/sllbrd/model"
)

// Defaults of the FileSource options.
const (
	// DefaultQuiet is how long the files must be left alone after an
	// event before they are read: the events of one save come together.
	DefaultQuiet = 5 * time.Millisecond
	// DefaultMaxDelay bounds how long a stream of events delays a read;
	// the reconcile loop's own minimum interval (50 ms) spaces the applies.
	DefaultMaxDelay = 50 * time.Millisecond
	// DefaultPollInterval is how often the path is read in full besides
	// the inotify events (a safety net: network file systems, a dropped
	// watch).
	DefaultPollInterval = 5 * time.Second
)

const (
	// pollWithoutInotify is the poll interval when inotify is unavailable.
	pollWithoutInotify = 500 * time.Millisecond
	// minRecheck is the least time after an unconfirmed read (a failure,
	// perhaps of a write in progress, or a change found by polling) before
	// the files are read again to confirm it.
	minRecheck = 100 * time.Millisecond
)

// Update is what a FileSource reports after reading the manifests.
type Update struct {
	// State is the last good state (nil until one was read); consumers must
	// not modify it. Its Generation increases each time it changes.
	State *model.State
	// Problems are the translator's findings for State's objects.
	Problems []translate.Problem
	// Err is why the current content could not be used (unreadable file,
	// malformed document, no such Gateway); State is then the previous one.
	Err error
	// Observed is when the source first saw a sign of the change this
	// Update reflects (a file-system or API event); zero if unknown.
	Observed time.Time
}

// FileSource reads manifests from a file or directory and follows edits.
type FileSource struct {
	path       string
	gateway    string
	interval   time.Duration
	quiet, max time.Duration
	log        *slog.Logger
	opts       []translate.Option
}

// Option configures a FileSource.
type Option func(*FileSource)

// WithPollInterval sets how often the path is also read in full, besides
// the inotify events (default 5s).
func WithPollInterval(d time.Duration) Option {
	return func(s *FileSource) { s.interval = d }
}

// WithDebounce sets how long the files must be left alone after an event
// before they are read (quiet, default 5ms) and the longest a stream of
// events delays a read (max, default 50ms).
func WithDebounce(quiet, max time.Duration) Option {
	return func(s *FileSource) { s.quiet, s.max = quiet, max }
}

// WithLogger sets the logger of debug notes (ignored kinds); default
// slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(s *FileSource) { s.log = l }
}

// WithTranslateOptions passes options to every translation (e.g.
// translate.WithCopyRange).
func WithTranslateOptions(opts ...translate.Option) Option {
	return func(s *FileSource) { s.opts = append(s.opts, opts...) }
}

// NewFileSource returns a source for the Gateway gatewayName ("name" or
// "namespace/name") defined in the manifests at path.
func NewFileSource(path, gatewayName string, opts ...Option) *FileSource {
	s := &FileSource{path: filepath.Clean(path), gateway: gatewayName, interval: DefaultPollInterval,
		quiet: DefaultQuiet, max: DefaultMaxDelay, log: slog.Default()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Run reads the manifests at once, then whenever inotify reports a change
// (and every poll interval), and calls emit (from Run's goroutine) for the
// first result and for every change of state, problems or error. It
// returns nil when ctx is done.
func (s *FileSource) Run(ctx context.Context, emit func(Update)) error {
	f := &follower{src: s, emit: emit, burst: newBurst(s.quiet, s.max)}
	var batches <-chan fsBatch
	poll := s.interval
	if in, err := newInotify(); err != nil {
		s.log.Warn("inotify unavailable; polling the manifests", "every", min(poll, pollWithoutInotify).String(), "err", err)
		poll = min(poll, pollWithoutInotify)
	} else {
		f.in = in
		defer func() { _ = f.in.close() }()
		batches = in.start()
	}
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	f.watch(nil) // before the first read: no edit is missed in between
	f.read(time.Now(), true)
	for {
		if due, ok := f.due(); ok {
			timer.Reset(time.Until(due))
		} else {
			timer.Stop()
		}
		select {
		case <-ctx.Done():
			return nil
		case b := <-batches:
			if b.err != nil {
				s.log.Warn("inotify failed; polling the manifests", "every", pollWithoutInotify.String(), "err", b.err)
				_ = f.in.close()
				f.in, batches = nil, nil
				ticker.Reset(min(s.interval, pollWithoutInotify))
				continue
			}
			f.observe(b)
		case now := <-ticker.C:
			if !f.burst.pending {
				f.read(now, false)
			}
		case now := <-timer.C:
			f.timeout(now)
		}
	}
}

// load reads and translates one version of the manifests.
func (s *FileSource) load(files []file, readErr error) (*model.State, []translate.Problem, error) {
	if readErr != nil {
		return nil, nil, readErr
	}
	objs, err := decodeFiles(files)
	if err != nil {
		return nil, nil, err
	}
	for _, note := range objs.Ignored {
		s.log.Debug("manifest of an unused kind ignored", "document", note)
	}
	snap, err := objs.Snapshot(s.gateway)
	if err != nil {
		return nil, nil, err
	}
	return translate.Translate(snap, s.opts...)
}

// recheck is how long after an unconfirmed read the files are read again:
// twice the maximum delay, at least minRecheck.
func (s *FileSource) recheck() time.Duration { return max(2*s.max, minRecheck) }

// isManifestFile reports whether path names a file the source reads: the
// path itself or a manifest in the directory it names.
func (s *FileSource) isManifestFile(path string) bool {
	return path == s.path || filepath.Dir(path) == s.path && isManifestName(filepath.Base(path))
}
