package targetbfd

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
)

// fakeServer records the calls a keeper makes and holds the sessions as a
// bfd.Server would; fail makes the listed operations on a peer fail.
type fakeServer struct {
	sessions map[bfd.Key]bfd.SessionConfig
	calls    []string
	fail     map[string]error // "add 169.111.100.1" -> error
}

func newFakeServer() *fakeServer {
	return &fakeServer{sessions: map[bfd.Key]bfd.SessionConfig{}, fail: map[string]error{}}
}

func (f *fakeServer) call(op string, k bfd.Key) error {
	c := op + " " + k.Peer.String()
	f.calls = append(f.calls, c)
	return f.fail[c]
}

func (f *fakeServer) Add(c bfd.SessionConfig) error {
	if err := f.call("add", c.Key()); err != nil {
		return err
	}
	if _, ok := f.sessions[c.Key()]; ok {
		return bfd.ErrExists
	}
	f.sessions[c.Key()] = c
	return nil
}

func (f *fakeServer) Update(c bfd.SessionConfig) error {
	if err := f.call("update", c.Key()); err != nil {
		return err
	}
	if _, ok := f.sessions[c.Key()]; !ok {
		return bfd.ErrNotFound
	}
	f.sessions[c.Key()] = c
	return nil
}

func (f *fakeServer) Remove(k bfd.Key) error {
	if err := f.call("remove", k); err != nil {
		return err
	}
	if _, ok := f.sessions[k]; !ok {
		return bfd.ErrNotFound
	}
	delete(f.sessions, k)
	return nil
}

func (f *fakeServer) takeCalls() []string {
	c := f.calls
	f.calls = nil
	return c
}

func sessionSet(interval time.Duration, peers ...string) map[bfd.Key]bfd.SessionConfig {
	out := map[bfd.Key]bfd.SessionConfig{}
	for _, p := range peers {
		c := bfd.SessionConfig{Peer: ip(p), Interface: "net1", DesiredMinTx: interval, RequiredMinRx: interval, DetectMultiplier: 3}
		out[c.Key()] = c
	}
	return out
}

func TestKeeperChangesOnlyWhatDiffers(t *testing.T) {
	f := newFakeServer()
	k := newKeeper(f)
	steps := []struct {
		name  string
		want  map[bfd.Key]bfd.SessionConfig
		calls []string
	}{
		{"first set: all added", sessionSet(time.Second, "169.111.100.1", "fd00:111::1"), []string{"add 169.111.100.1", "add fd00:111::1"}},
		{"the same again: nothing", sessionSet(time.Second, "169.111.100.1", "fd00:111::1"), nil},
		{"one more, one gone", sessionSet(time.Second, "169.111.100.2", "fd00:111::1"), []string{"remove 169.111.100.1", "add 169.111.100.2"}},
		{"timing changed: updated, not re-added", sessionSet(100*time.Millisecond, "169.111.100.2", "fd00:111::1"),
			[]string{"update 169.111.100.2", "update fd00:111::1"}},
		{"nothing wanted: all removed", nil, []string{"remove 169.111.100.2", "remove fd00:111::1"}},
	}
	for _, s := range steps {
		c := k.set(s.want)
		if got := f.takeCalls(); !slices.Equal(got, s.calls) || c.err != nil || c.failed != 0 {
			t.Errorf("%s: calls %q (error %v, %d failed), want %q", s.name, got, c.err, c.failed, s.calls)
		}
		if len(f.sessions) != len(s.want) {
			t.Errorf("%s: the server holds %v, want %v", s.name, f.sessions, s.want)
		}
		if n := len(c.added) + len(c.updated) + len(c.removed); n != len(s.calls) {
			t.Errorf("%s: %d changes reported for %d calls", s.name, n, len(s.calls))
		}
	}
}

func TestKeeperCountsRefusalsAndTriesAgain(t *testing.T) {
	f := newFakeServer()
	k := newKeeper(f)
	refused := errors.New("refused")
	f.fail["add 169.111.100.1"] = refused
	want := sessionSet(time.Second, "169.111.100.1", "169.111.100.2")
	c := k.set(want)
	if c.failed != 1 || !errors.Is(c.err, refused) || len(c.added) != 1 {
		t.Fatalf("a refused add: %d failed, error %v, added %v", c.failed, c.err, c.added)
	}
	delete(f.fail, "add 169.111.100.1")
	f.takeCalls()
	if c = k.set(want); c.failed != 0 || !slices.Equal(f.takeCalls(), []string{"add 169.111.100.1"}) {
		t.Errorf("the refused add is not tried again alone: %+v", c)
	}

	// A refused remove keeps the session known, and is tried again.
	f.fail["remove 169.111.100.2"] = refused
	c = k.set(sessionSet(time.Second, "169.111.100.1"))
	if c.failed != 1 || len(f.sessions) != 2 {
		t.Fatalf("a refused remove: %+v, the server holds %v", c, f.sessions)
	}
	delete(f.fail, "remove 169.111.100.2")
	f.takeCalls()
	if c = k.set(sessionSet(time.Second, "169.111.100.1")); c.failed != 0 || !slices.Equal(f.takeCalls(), []string{"remove 169.111.100.2"}) {
		t.Errorf("the refused remove is not tried again: %+v", c)
	}

	// A session the server lost: the update fails, the next set adds it.
	delete(f.sessions, key("169.111.100.1", "net1"))
	c = k.set(sessionSet(2*time.Second, "169.111.100.1"))
	if c.failed != 1 || !errors.Is(c.err, bfd.ErrNotFound) {
		t.Fatalf("update of a lost session: %+v", c)
	}
	f.takeCalls()
	if c = k.set(sessionSet(2*time.Second, "169.111.100.1")); c.failed != 0 || fmt.Sprint(f.takeCalls()) != "[add 169.111.100.1]" {
		t.Errorf("the lost session is not added again: %+v", c)
	}
}
