package informer

import (
	"fmt"
	"sync/atomic"

	"k8s.io/client-go/tools/cache"
)

// store is the Reflector's store: it transforms each object, keeps it in
// the indexer and then tells the handler.
type store struct {
	indexer   cache.Indexer
	transform cache.TransformFunc // nil: objects kept as received
	handler   cache.ResourceEventHandler
	synced    atomic.Bool // the first Replace is stored and handled
}

var _ cache.ReflectorStore = (*store)(nil)

func (s *store) tx(obj any) (any, error) {
	if s.transform == nil {
		return obj, nil
	}
	out, err := s.transform(obj)
	if err != nil {
		return nil, fmt.Errorf("informer: transform: %w", err)
	}
	return out, nil
}

// Add stores an added object.
func (s *store) Add(obj any) error { return s.put(obj) }

// Update stores a changed object.
func (s *store) Update(obj any) error { return s.put(obj) }

func (s *store) put(obj any) error {
	obj, err := s.tx(obj)
	if err != nil {
		return err
	}
	old, exists, err := s.indexer.Get(obj)
	if err != nil {
		return fmt.Errorf("informer: %w", err)
	}
	if err := s.indexer.Update(obj); err != nil {
		return fmt.Errorf("informer: %w", err)
	}
	if exists {
		s.handler.OnUpdate(old, obj)
	} else {
		s.handler.OnAdd(obj, false)
	}
	return nil
}

// Delete removes an object; the handler gets the object the watch
// delivered (its last state).
func (s *store) Delete(obj any) error {
	obj, err := s.tx(obj)
	if err != nil {
		return err
	}
	if _, exists, err := s.indexer.Get(obj); err != nil || !exists {
		return err // already gone: nothing to tell
	}
	if err := s.indexer.Delete(obj); err != nil {
		return fmt.Errorf("informer: %w", err)
	}
	s.handler.OnDelete(obj)
	return nil
}

// Replace stores a list as the whole content: what it holds is added or
// updated, what it lacks is deleted (as cache.DeletedFinalStateUnknown,
// its last state being unknown).
func (s *store) Replace(list []any, resourceVersion string) error {
	items := make([]any, 0, len(list))
	for _, obj := range list {
		obj, err := s.tx(obj)
		if err != nil {
			return err
		}
		items = append(items, obj)
	}
	before := map[string]any{}
	for _, obj := range s.indexer.List() {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return fmt.Errorf("informer: %w", err)
		}
		before[key] = obj
	}
	if err := s.indexer.Replace(items, resourceVersion); err != nil {
		return fmt.Errorf("informer: %w", err)
	}
	initial := !s.synced.Load()
	for _, obj := range items {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return fmt.Errorf("informer: %w", err)
		}
		if old, ok := before[key]; ok {
			delete(before, key)
			s.handler.OnUpdate(old, obj)
		} else {
			s.handler.OnAdd(obj, initial)
		}
	}
	for key, old := range before {
		s.handler.OnDelete(cache.DeletedFinalStateUnknown{Key: key, Obj: old})
	}
	s.synced.Store(true)
	return nil
}

// Resync does nothing: an Informer has no resync period.
func (s *store) Resync() error { return nil }
