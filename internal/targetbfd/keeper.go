package targetbfd

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/sllbrd/sllbrd/bfd"
)

// server is what a keeper changes; *bfd.Server implements it.
type server interface {
	Add(bfd.SessionConfig) error
	Update(bfd.SessionConfig) error
	Remove(bfd.Key) error
}

var _ server = (*bfd.Server)(nil)

// keeper makes one server's sessions equal a wanted set, changing only
// what differs from what it added before. Not safe for concurrent use.
type keeper struct {
	srv  server
	have map[bfd.Key]bfd.SessionConfig // added (or updated) without error
}

func newKeeper(s server) *keeper { return &keeper{srv: s, have: map[bfd.Key]bfd.SessionConfig{}} }

// change is what one set did.
type change struct {
	added, updated, removed []bfd.Key
	failed                  int // operations the server refused
	err                     error
}

// set removes the sessions not in want, adds the new ones and updates those
// whose configuration changed. A refused Add is tried again at the next
// set; a session whose Update or Remove is refused is forgotten only when
// the server does not have it.
func (k *keeper) set(want map[bfd.Key]bfd.SessionConfig) change {
	var c change
	var errs []error
	fail := func(err error) {
		c.failed++
		errs = append(errs, err)
	}
	for _, key := range sortedKeys(k.have) {
		if _, ok := want[key]; ok {
			continue
		}
		err := k.srv.Remove(key)
		if err != nil && !errors.Is(err, bfd.ErrNotFound) {
			fail(fmt.Errorf("remove the session with %v: %w", key, err))
			continue
		}
		delete(k.have, key)
		c.removed = append(c.removed, key)
	}
	for _, key := range sortedKeys(want) {
		cfg := want[key]
		old, ok := k.have[key]
		switch {
		case ok && old == cfg:
			continue
		case ok:
			if err := k.srv.Update(cfg); err != nil {
				fail(fmt.Errorf("update the session with %v: %w", key, err))
				if errors.Is(err, bfd.ErrNotFound) {
					delete(k.have, key) // added again at the next set
				}
				continue
			}
			c.updated = append(c.updated, key)
		default:
			if err := k.srv.Add(cfg); err != nil {
				fail(fmt.Errorf("add a session with %v: %w", key, err))
				continue
			}
			c.added = append(c.added, key)
		}
		k.have[key] = cfg
	}
	c.err = errors.Join(errs...)
	return c
}

func sortedKeys(m map[bfd.Key]bfd.SessionConfig) []bfd.Key {
	return slices.SortedFunc(maps.Keys(m), func(a, b bfd.Key) int {
		return cmp.Or(a.Peer.Compare(b.Peer), cmp.Compare(a.Interface, b.Interface))
	})
}
