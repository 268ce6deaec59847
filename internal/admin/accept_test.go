package admin

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// scriptedListener fails its accepts with errs, one per call, then
// returns conn; with errs used up and no conn it fails with the last error
// for ever.
type scriptedListener struct {
	mu    sync.Mutex
	errs  []error
	conn  net.Conn
	calls int
}

func (l *scriptedListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if len(l.errs) > 1 || (len(l.errs) == 1 && l.conn != nil) {
		err := l.errs[0]
		l.errs = l.errs[1:]
		return nil, err
	}
	if l.conn != nil {
		return l.conn, nil
	}
	return nil, l.errs[0]
}

func (l *scriptedListener) Close() error   { return nil }
func (l *scriptedListener) Addr() net.Addr { return &net.UnixAddr{Name: "scripted", Net: "unix"} }

// acceptError is an accept failure as package net returns it.
func acceptError(errno syscall.Errno) error {
	return &net.OpError{Op: "accept", Net: "unix", Err: os.NewSyscallError("accept4", errno)}
}

// logRecorder returns a logger whose records the returned recorder keeps.
func logRecorder() (*slog.Logger, *recorder) {
	r := &recorder{}
	return slog.New(r), r
}

// recorder is a slog.Handler keeping the level and message of each record.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec)
	return nil
}

// lines returns the messages logged at level.
func (r *recorder) lines(level slog.Level) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.records {
		if rec.Level == level {
			out = append(out, rec.Message)
		}
	}
	return out
}

// TestListenerRetriesTemporaryAcceptFailures: out of descriptors, out of
// memory or an aborted connection, Accept waits and tries again until a
// connection comes, counting each failure and logging the run of them once
// and its end.
func TestListenerRetriesTemporaryAcceptFailures(t *testing.T) {
	log, logged := logRecorder()
	d := NewDiagnostics(log)
	want, _ := net.Pipe()
	defer want.Close()
	inner := &scriptedListener{conn: want, errs: []error{acceptError(syscall.EMFILE), acceptError(syscall.ENFILE),
		acceptError(syscall.ENOMEM), acceptError(syscall.ECONNABORTED)}}
	ln := d.Listener(ServerMetrics, inner)
	got, err := ln.Accept()
	if err != nil || got != want {
		t.Fatalf("Accept = %v, %v; want the connection after the failures", got, err)
	}
	h := d.Health()
	if len(h) != 1 || h[0].Name != ServerMetrics || h[0].AcceptErrors != 4 || !strings.Contains(h[0].LastError, "connection abort") {
		t.Errorf("health %+v, want 4 accept errors of %s", h, ServerMetrics)
	}
	if w, i := logged.lines(slog.LevelWarn), logged.lines(slog.LevelInfo); len(w) != 1 || len(i) != 1 {
		t.Errorf("logged warnings %q and infos %q, want one of each", w, i)
	}
}

// TestListenerReturnsOtherFailures: an accept failure that does not pass
// is returned at once, as it is.
func TestListenerReturnsOtherFailures(t *testing.T) {
	d := NewDiagnostics(slog.New(slog.DiscardHandler))
	for _, failure := range []error{acceptError(syscall.EBADF), errors.New("boom"), net.ErrClosed} {
		inner := &scriptedListener{errs: []error{failure}}
		if _, err := d.Listener(ServerPprof, inner).Accept(); !errors.Is(err, failure) || inner.calls != 1 {
			t.Errorf("Accept = %v after %d calls, want %v after one", err, inner.calls, failure)
		}
	}
}

// TestListenerCloseEndsTheWait: Close ends an Accept that waits to retry.
func TestListenerCloseEndsTheWait(t *testing.T) {
	d := NewDiagnostics(slog.New(slog.DiscardHandler))
	ln := d.Listener(ServerAdminSocket, &scriptedListener{errs: []error{acceptError(syscall.EMFILE)}})
	done := make(chan error, 1)
	go func() {
		_, err := ln.Accept()
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close = %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waiting 5 s after Close")
	}
}

// TestServerOutOfDescriptors runs the admin socket with the process's
// descriptor limit at the descriptors it holds: the server's accepts fail
// with EMFILE, and it keeps its socket and its connection waiting; once
// descriptors are free again it answers that connection and new ones.
func TestServerOutOfDescriptors(t *testing.T) {
	d := NewDiagnostics(slog.New(slog.DiscardHandler))
	path := serve(t, WithDiagnostics(d))
	// The client's socket is made while descriptors are free; connecting
	// needs none.
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	client := os.NewFile(uintptr(fd), "client")
	defer client.Close()

	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
		t.Fatal(err)
	}
	restore := sync.OnceFunc(func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
			t.Errorf("restoring RLIMIT_NOFILE: %v", err)
		}
	})
	t.Cleanup(restore)
	lowest := lowestFreeDescriptor(t)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: uint64(lowest), Max: limit.Max}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		restore()
		t.Fatalf("connect: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for accepts(d) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	restore()
	if n := accepts(d); n < 3 {
		t.Fatalf("%d failed accepts counted with no descriptor free, want 3 or more", n)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the socket went while accepts failed: %v", err)
	}

	c, err := net.FileConn(client)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := json.NewEncoder(c).Encode(Request{Command: CommandShow, Topic: TopicConfig}); err != nil {
		t.Fatal(err)
	}
	var resp Response
	if err := json.NewDecoder(c).Decode(&resp); err != nil || resp.Error != "" {
		t.Fatalf("the connection made while accepts failed: %+v, %v", resp, err)
	}
	var cfg Config
	if err := call(t, path, Request{Command: CommandShow, Topic: TopicConfig}, &cfg); err != nil || cfg.Gateway != "gw" {
		t.Fatalf("a new connection: %+v, %v", cfg, err)
	}
}

// accepts returns the failed accepts d counted on the admin socket.
func accepts(d *Diagnostics) uint64 {
	for _, h := range d.Health() {
		if h.Name == ServerAdminSocket {
			return h.AcceptErrors
		}
	}
	return 0
}

// lowestFreeDescriptor is the number the next descriptor the process
// opens gets: with RLIMIT_NOFILE at it, no new descriptor can be opened.
func lowestFreeDescriptor(t *testing.T) int {
	t.Helper()
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	n := int(f.Fd())
	f.Close()
	return n
}
