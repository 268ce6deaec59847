package controller

import (
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// trackerPatience bounds how long a written version is waited for in the
// cache: past it, the entry is dropped (someone else may have changed or
// deleted the slice since, so it may never appear).
const trackerPatience = 5 * time.Second

// sliceTracker remembers the EndpointSlices this replica wrote until its
// cache shows them, so that a Service is never reconciled from a cache that
// lacks the replica's own last writes (identifiers are recovered from the
// slices: an old view could hand an identifier out twice).
type sliceTracker struct {
	mu       sync.Mutex
	now      func() time.Time
	expected map[string]map[string]written // service -> slice name -> write
}

type written struct {
	uid             types.UID
	generation      int64
	resourceVersion string
	deleted         bool
	at              time.Time
}

func newSliceTracker() *sliceTracker {
	return &sliceTracker{now: time.Now, expected: map[string]map[string]written{}}
}

func (t *sliceTracker) record(service, name string, w written) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.expected[service] == nil {
		t.expected[service] = map[string]written{}
	}
	w.at = t.now()
	t.expected[service][name] = w
}

// wrote records a slice as created or updated (the API's answer).
func (t *sliceTracker) wrote(service string, s *discoveryv1.EndpointSlice) {
	t.record(service, s.Name, written{uid: s.UID, generation: s.Generation, resourceVersion: s.ResourceVersion})
}

// deleted records a slice as deleted.
func (t *sliceTracker) deleted(service string, s *discoveryv1.EndpointSlice) {
	t.record(service, s.Name, written{uid: s.UID, deleted: true})
}

// stale reports whether cached (the Service's slices in the cache) misses
// one of the writes recorded for the Service; writes the cache shows are
// forgotten.
func (t *sliceTracker) stale(service string, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	byName := make(map[string]*discoveryv1.EndpointSlice, len(cached))
	for _, s := range cached {
		byName[s.Name] = s
	}
	stale := false
	for name, w := range t.expected[service] {
		if seen(w, byName[name]) || t.now().Sub(w.at) > trackerPatience {
			delete(t.expected[service], name)
			continue
		}
		stale = true
	}
	if len(t.expected[service]) == 0 {
		delete(t.expected, service)
	}
	return stale
}

// seen reports whether the cached slice (nil: absent) shows the write w or
// something later.
func seen(w written, s *discoveryv1.EndpointSlice) bool {
	switch {
	case w.deleted:
		return s == nil || s.UID != w.uid
	case s == nil:
		return false
	}
	return s.UID != w.uid || s.Generation > w.generation || s.ResourceVersion == w.resourceVersion
}
