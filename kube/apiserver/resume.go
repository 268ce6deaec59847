package apiserver

import (
	"context"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

const (
	// resumeRetry is how often the resumer looks again while an
	// interruption is not made good, besides being woken.
	resumeRetry = 250 * time.Millisecond
	// catchUpWait is how long the resumer waits for a cache to catch up
	// with one read of the server before it reads again.
	catchUpWait = time.Second
)

// resume makes interruptions good (see health): once the server answers
// and every informer has a watch stream open, it reads each informer's
// objects from the server and waits until the informer's cache holds that
// state or a newer one; then it records the epoch as caught up and asks
// Run for a rebuild (changed), whose publication makes the source ready.
// It returns when ctx is done.
func (s *Source) resume(ctx context.Context, w *watchers, changed chan<- struct{}) {
	retry := time.NewTicker(resumeRetry)
	defer retry.Stop()
	kinds := w.kinds()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.health.wake:
		case <-retry.C:
		}
		e, ok := s.health.resumable(kinds)
		if !ok || !w.catchUp(ctx, s.health, e) {
			continue
		}
		s.health.setCaughtUp(e)
		signal(changed)
	}
}

// catchUp reports whether every informer's cache caught up with a read of
// the server made now; false if a read failed, epoch e ended (another
// interruption) or ctx is done.
func (w *watchers) catchUp(ctx context.Context, h *health, e uint64) bool {
	for _, l := range w.links {
		if !l.catchUp(ctx, h, e) {
			return false
		}
	}
	return true
}

func (l *link) catchUp(ctx context.Context, h *health, e uint64) bool {
	for {
		select { // events before the read do not count
		case <-l.changed:
		default:
		}
		// ResourceVersion "": a consistent read, as current as etcd.
		list, err := l.ListWithContext(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		want, err := versionsOf(list)
		if err != nil { // not a list of objects: cannot happen with an API server
			return false
		}
		if l.waitHeld(ctx, h, e, want) {
			return true
		}
		if ctx.Err() != nil || current(h) != e {
			return false
		}
	}
}

// waitHeld waits until the informer's cache holds want, up to catchUpWait.
func (l *link) waitHeld(ctx context.Context, h *health, e uint64, want versions) bool {
	timeout := time.NewTimer(catchUpWait)
	defer timeout.Stop()
	for !want.heldBy(l.informer.GetStore().List()) {
		select {
		case <-ctx.Done():
			return false
		case <-timeout.C:
			return false
		case <-l.changed:
		}
		if current(h) != e {
			return false
		}
	}
	return true
}

// versions are the resource versions of the objects one read returned, by
// key, and the read's own.
type versions struct {
	byKey map[string]string
	read  string
}

func versionsOf(list runtime.Object) (versions, error) {
	la, err := meta.ListAccessor(list)
	if err != nil {
		return versions{}, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return versions{}, err
	}
	v := versions{byKey: make(map[string]string, len(items)), read: la.GetResourceVersion()}
	for _, it := range items {
		key, rv, err := keyVersion(it)
		if err != nil {
			return versions{}, err
		}
		v.byKey[key] = rv
	}
	return v, nil
}

// heldBy reports whether a cache holding cached reflects the read or a
// later state: it holds exactly the objects read, at the versions read, or
// it holds an object of the read's version or a later one (the watch
// delivers changes in order, so everything before that one was applied). Versions
// are compared as numbers only where both are (as etcd's revisions are);
// otherwise only an exact match counts.
func (v versions) heldBy(cached []any) bool {
	read, readErr := strconv.ParseUint(v.read, 10, 64)
	same := len(cached) == len(v.byKey)
	for _, obj := range cached {
		key, rv, err := keyVersion(obj)
		if err != nil {
			return false
		}
		if n, err := strconv.ParseUint(rv, 10, 64); readErr == nil && err == nil && n >= read {
			return true
		}
		if v.byKey[key] != rv {
			same = false
		}
	}
	return same
}

func keyVersion(obj any) (key, rv string, err error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", "", err
	}
	key, err = cache.MetaNamespaceKeyFunc(obj)
	return key, m.GetResourceVersion(), err
}

// current returns the health's epoch.
func current(h *health) uint64 {
	e, _ := h.epochs()
	return e
}
