package manifest

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"time"

	"github.com/sllbrd/sllbrd/kube/translate"
	"github.com/sllbrd/sllbrd/model"
)

// DefaultPollInterval is how often a FileSource looks for edits.
const DefaultPollInterval = 500 * time.Millisecond

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
}

// FileSource reads manifests from a file or directory and follows edits.
type FileSource struct {
	path     string
	gateway  string
	interval time.Duration
	log      *slog.Logger
	opts     []translate.Option
}

// Option configures a FileSource.
type Option func(*FileSource)

// WithPollInterval sets how often the path is read (default 500ms).
func WithPollInterval(d time.Duration) Option {
	return func(s *FileSource) { s.interval = d }
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
	s := &FileSource{path: path, gateway: gatewayName, interval: DefaultPollInterval, log: slog.Default()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Run reads the manifests at once, then every poll interval, and calls
// emit (from Run's goroutine) for the first result and for every change of
// state, problems or error. It returns nil when ctx is done.
func (s *FileSource) Run(ctx context.Context, emit func(Update)) error {
	var w watcher
	ticker := time.NewTicker(s.interval)
	defer ticker.Stop()
	first := true
	for {
		files, readErr := readPath(s.path)
		hash := contentHash(files)
		if readErr != nil {
			hash = sha256.Sum256([]byte(readErr.Error()))
		}
		if w.settled(hash, first) {
			if u, changed := w.Apply(s.load(files, readErr)); changed {
				emit(u)
			}
		}
		first = false
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
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

// watcher holds what was last read, applied and emitted.
type watcher struct {
	Publisher
	applied, pending [sha256.Size]byte
	hasApplied       bool
}

// settled reports whether content hash should be applied now: at first
// sight on the first read, otherwise once seen on two polls in a row.
func (w *watcher) settled(hash [sha256.Size]byte, first bool) bool {
	if w.hasApplied && hash == w.applied {
		return false
	}
	if !first && hash != w.pending {
		w.pending = hash
		return false
	}
	w.applied, w.pending, w.hasApplied = hash, hash, true
	return true
}
