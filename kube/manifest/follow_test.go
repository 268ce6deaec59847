package manifest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// manifests returns the test Gateway and a route with priority prio.
func manifests(prio int) string {
	return testGateway + "---\n" + strings.Replace(testRoute, "PRIORITY", fmt.Sprint(prio), 1)
}

// waitPriority reads updates until one carries a route of priority prio,
// failing on an error update.
func waitPriority(t *testing.T, updates <-chan Update, prio int32) Update {
	t.Helper()
	for {
		u := nextUpdate(t, updates)
		if u.Err != nil {
			t.Fatalf("error update while waiting for priority %d: %v", prio, u.Err)
		}
		if u.State != nil && len(u.State.Routes) == 1 && u.State.Routes[0].Priority == prio {
			return u
		}
	}
}

// replace writes content to path atomically, as editors and kubectl do:
// a temporary file in the same directory renamed over it.
func replace(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".swp")
	write(t, tmp, content)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// configMap lays out dir as the kubelet mounts a ConfigMap: the data in a
// timestamped directory, a "..data" link to it, and per key a link
// "<key> -> ..data/<key>". Each call is one atomic update, as the kubelet's
// atomic writer does it: new directory, "..data_tmp" link renamed over
// "..data", the old directory removed.
type configMap struct {
	t   *testing.T
	dir string
	n   int
}

func (c *configMap) update(files map[string]string) {
	c.t.Helper()
	c.n++
	ts := fmt.Sprintf("..2026_01_01_00_00_%02d.%d", c.n, c.n)
	must(c.t, os.Mkdir(filepath.Join(c.dir, ts), 0o755))
	for name, content := range files {
		write(c.t, filepath.Join(c.dir, ts, name), content)
	}
	old, _ := os.Readlink(filepath.Join(c.dir, "..data"))
	must(c.t, os.Symlink(ts, filepath.Join(c.dir, "..data_tmp")))
	must(c.t, os.Rename(filepath.Join(c.dir, "..data_tmp"), filepath.Join(c.dir, "..data")))
	for name := range files {
		link := filepath.Join(c.dir, name)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			must(c.t, os.Symlink(filepath.Join("..data", name), link))
		}
	}
	if old != "" {
		must(c.t, os.RemoveAll(filepath.Join(c.dir, old)))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestFileSourceFollowsReplacements: with polling out of the picture,
// every way a manifest is replaced is seen: an atomic rename, a ConfigMap
// update (directory and single-file mounts), an edit of a link's target
// outside the directory, and the directory or file deleted and re-created.
func TestFileSourceFollowsReplacements(t *testing.T) {
	t.Run("rename in a directory", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "all.yaml"), manifests(1))
		updates := runSource(t, dir)
		waitPriority(t, updates, 1)
		for prio := 2; prio <= 4; prio++ {
			replace(t, filepath.Join(dir, "all.yaml"), manifests(prio))
			waitPriority(t, updates, int32(prio))
		}
	})
	t.Run("ConfigMap directory mount", func(t *testing.T) {
		cm := &configMap{t: t, dir: t.TempDir()}
		cm.update(map[string]string{"all.yaml": manifests(1)})
		updates := runSource(t, cm.dir)
		waitPriority(t, updates, 1)
		for prio := 2; prio <= 4; prio++ {
			cm.update(map[string]string{"all.yaml": manifests(prio)})
			waitPriority(t, updates, int32(prio))
		}
	})
	t.Run("ConfigMap key as the path", func(t *testing.T) {
		cm := &configMap{t: t, dir: t.TempDir()}
		cm.update(map[string]string{"all.yaml": manifests(1)})
		updates := runSource(t, filepath.Join(cm.dir, "all.yaml"))
		waitPriority(t, updates, 1)
		for prio := 2; prio <= 4; prio++ {
			cm.update(map[string]string{"all.yaml": manifests(prio)})
			waitPriority(t, updates, int32(prio))
		}
	})
	t.Run("link target edited in place", func(t *testing.T) {
		dir, elsewhere := t.TempDir(), t.TempDir()
		target := filepath.Join(elsewhere, "real.yaml")
		write(t, target, manifests(1))
		must(t, os.Symlink(target, filepath.Join(dir, "all.yaml")))
		updates := runSource(t, dir)
		waitPriority(t, updates, 1)
		write(t, target, manifests(2))
		waitPriority(t, updates, 2)
	})
	t.Run("directory deleted and re-created", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "manifests")
		must(t, os.Mkdir(dir, 0o755))
		write(t, filepath.Join(dir, "all.yaml"), manifests(1))
		updates := runSource(t, dir)
		waitPriority(t, updates, 1)
		must(t, os.RemoveAll(dir))
		if u := nextUpdate(t, updates); u.Err == nil || u.State == nil || u.State.Routes[0].Priority != 1 {
			t.Fatalf("after deleting the directory: err %v; want an error and the last good state", u.Err)
		}
		must(t, os.Mkdir(dir, 0o755))
		write(t, filepath.Join(dir, "all.yaml"), manifests(2))
		waitPriority(t, updates, 2)
		write(t, filepath.Join(dir, "all.yaml"), manifests(3)) // the new directory is watched
		waitPriority(t, updates, 3)
	})
	t.Run("file deleted and re-created", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "all.yaml")
		write(t, path, manifests(1))
		updates := runSource(t, path)
		waitPriority(t, updates, 1)
		must(t, os.Remove(path))
		if u := nextUpdate(t, updates); u.Err == nil {
			t.Fatalf("after deleting the file: no error")
		}
		write(t, path, manifests(2))
		waitPriority(t, updates, 2)
	})
}

// TestFileSourceWaitsForTheWriter: a file being written in place (modified,
// not closed) is not read, even when what was written so far is valid on
// its own; it is read once the writer closes it.
func TestFileSourceWaitsForTheWriter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "all.yaml")
	write(t, path, manifests(1))
	updates := runSource(t, dir)
	waitPriority(t, updates, 1)

	w, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	must(t, err)
	defer w.Close()
	// The Gateway alone is a valid configuration: without the route.
	if _, err := w.WriteString(testGateway); err != nil {
		t.Fatal(err)
	}
	expectNoUpdate(t, updates) // 200 ms: 4 times the maximum delay
	if _, err := w.WriteString("---\n" + strings.Replace(testRoute, "PRIORITY", "2", 1)); err != nil {
		t.Fatal(err)
	}
	must(t, w.Close())
	waitPriority(t, updates, 2)
	expectNoUpdate(t, updates)
}

// messages is a slog handler that passes each record's message on.
type messages chan string

func (m messages) Enabled(context.Context, slog.Level) bool { return true }
func (m messages) WithAttrs([]slog.Attr) slog.Handler       { return m }
func (m messages) WithGroup(string) slog.Handler            { return m }
func (m messages) Handle(_ context.Context, r slog.Record) error {
	select {
	case m <- r.Message:
	default: // nobody listening: dropped
	}
	return nil
}

// waitMessage waits for a log message containing s.
func (m messages) waitMessage(t *testing.T, s string) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case msg := <-m:
			if strings.Contains(msg, s) {
				return
			}
		case <-timeout:
			t.Fatalf("no log message with %q within 5s", s)
		}
	}
}

// TestFileSourceRereadsFailures: a change that cannot be used is read again
// before it is reported; if the next edit repairs it first, the failure is
// never reported and the state goes straight to the repaired content.
func TestFileSourceRereadsFailures(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "all.yaml")
	write(t, path, manifests(1))
	logs := make(messages, 100)
	// A maximum delay of 1s makes the re-read come 2s after the failure.
	updates := runSource(t, dir, WithLogger(slog.New(logs)), WithDebounce(DefaultQuiet, time.Second))
	waitPriority(t, updates, 1)

	replace(t, path, manifests(2)[:len(manifests(2))-30]) // cut inside the route
	logs.waitMessage(t, "reading them again")
	replace(t, path, manifests(3))
	waitPriority(t, updates, 3) // fails on an error update
}

// TestFileSourceCoalescesBursts: 1,000 atomic replacements in a row give a
// few updates, each at least the maximum delay after the previous one's
// first event, and the last content wins.
func TestFileSourceCoalescesBursts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "all.yaml")
	write(t, path, manifests(1))
	const maxDelay = 100 * time.Millisecond
	updates := runSource(t, dir, WithDebounce(maxDelay, maxDelay))
	waitPriority(t, updates, 1)
	start := time.Now()
	for i := range 1000 {
		replace(t, path, manifests(10+i%2))
	}
	replace(t, path, manifests(99))
	took := time.Since(start)
	n := 0
	waitPriorityCounting(t, updates, 99, &n)
	// With the quiet period as long as the maximum delay, every read ends a
	// window of at least maxDelay that began with the burst's first event:
	// at most one read per maxDelay, plus the one after the last write.
	bound := int(took/maxDelay) + 2
	t.Logf("1,001 writes in %v gave %d updates (bound %d)", took.Round(time.Millisecond), n, bound)
	if n > bound {
		t.Errorf("%d updates for a burst of %v, want at most %d", n, took, bound)
	}
}

// waitPriorityCounting is waitPriority counting the updates read.
func waitPriorityCounting(t *testing.T, updates <-chan Update, prio int32, n *int) Update {
	t.Helper()
	for {
		u := nextUpdate(t, updates)
		*n++
		if u.Err != nil {
			t.Fatalf("error update in a burst of valid writes: %v", u.Err)
		}
		if u.State.Routes[0].Priority == prio {
			return u
		}
	}
}
