package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeBackend answers with fixed results and records the last log level.
type fakeBackend struct {
	level string
}

func (f *fakeBackend) Routes(context.Context) (Routes, error) {
	return Routes{Generation: 7, Routes: []Route{{Name: "ns/r", Priority: 3, Service: "svc", ServiceFound: true}}}, nil
}

func (f *fakeBackend) Services(context.Context) (Services, error) {
	ep := func(svc string, id int) Endpoint {
		return Endpoint{Service: svc, ID: id, IPv4: &EndpointAddress{Address: netip.MustParseAddr("10.0.0.1"), Ready: true}}
	}
	return Services{Generation: 7, Services: []Service{
		{Name: "a", Endpoints: []Endpoint{ep("a", 0), ep("a", 1)}},
		{Name: "b", Endpoints: []Endpoint{ep("b", 4)}},
	}}, nil
}

func (f *fakeBackend) Sessions(context.Context) (Sessions, error) {
	return Sessions{}, errors.New("speaker unavailable")
}

func (f *fakeBackend) Fragments(context.Context) (Fragments, error) {
	return Fragments{Capacity: 64}, nil
}
func (f *fakeBackend) Config(context.Context) (Config, error) { return Config{Gateway: "gw"}, nil }

func (f *fakeBackend) Explain(_ context.Context, fl Flow) (Explanation, error) {
	return Explanation{Flow: fl, Verdict: "drop", Reason: "no_route"}, nil
}

func (f *fakeBackend) LogLevel(_ context.Context, level string) (LogLevel, error) {
	prev := f.level
	if level != "" {
		f.level = level
	}
	return LogLevel{Level: f.level, Previous: prev}, nil
}

// serve starts a server on a socket in a new directory under a temporary
// one and returns the socket's path.
func serve(t *testing.T, opts ...Option) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run", "admin.sock")
	srv, err := Listen(path, &fakeBackend{level: "INFO"}, append([]Option{WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("socket left behind after Serve: %v", err)
		}
	})
	return path
}

func call(t *testing.T, path string, req Request, out any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return Call(ctx, path, req, out)
}

func TestCommandsReachTheBackend(t *testing.T) {
	path := serve(t)
	var routes Routes
	if err := call(t, path, Request{Command: CommandShow, Topic: TopicRoutes}, &routes); err != nil || routes.Generation != 7 || routes.Routes[0].Name != "ns/r" {
		t.Fatalf("show routes: %+v, %v", routes, err)
	}
	var eps Endpoints
	if err := call(t, path, Request{Command: CommandShow, Topic: TopicEndpoints}, &eps); err != nil || len(eps.Endpoints) != 3 || eps.Endpoints[2].Service != "b" {
		t.Fatalf("show endpoints: %+v, %v", eps, err)
	}
	var sessions Sessions
	err := call(t, path, Request{Command: CommandShow, Topic: TopicSessions}, &sessions)
	var remote *RemoteError
	if !errors.As(err, &remote) || remote.Message != "speaker unavailable" {
		t.Fatalf("a backend error: %v, want it as a RemoteError", err)
	}
	flow := &Flow{Protocol: "udp", Source: netip.MustParseAddr("10.0.0.1"), SourcePort: 9, Destination: netip.MustParseAddr("20.0.0.1"),
		DestinationPort: 53, Payload: HexBytes{0xde, 0xad}}
	var x Explanation
	if err := call(t, path, Request{Command: CommandExplain, Flow: flow}, &x); err != nil || x.Flow.String() != flow.String() || string(x.Flow.Payload) != "\xde\xad" {
		t.Fatalf("explain: %+v, %v", x, err)
	}
	var lvl LogLevel
	if err := call(t, path, Request{Command: CommandLogLevel, Level: "debug"}, &lvl); err != nil || lvl != (LogLevel{Level: "debug", Previous: "INFO"}) {
		t.Fatalf("log-level debug: %+v, %v", lvl, err)
	}
}

// raw sends b on a new connection and returns the response.
func raw(t *testing.T, path string, b []byte) Response {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// A refused connection is answered and closed before its request is
	// read: the write may fail, and the answer still be there.
	_, werr := c.Write(b)
	var resp Response
	if err := json.NewDecoder(c).Decode(&resp); err != nil {
		t.Fatalf("response: %v (write: %v)", err, werr)
	}
	return resp
}

func TestBadRequestsAreRefused(t *testing.T) {
	path := serve(t)
	long := `{"command":"show","topic":"` + strings.Repeat("x", MaxRequestBytes) + `"}`
	for _, tc := range []struct{ req, want string }{
		{long, fmt.Sprintf("request longer than %d bytes", MaxRequestBytes)},
		{`{"command":"show","topic":"everything"}`, `show "everything": want one of`},
		{`{"command":"reboot"}`, `unknown command "reboot"`},
		{`{"command":"show","topic":"routes","extra":1}`, `unknown field "extra"`},
		{`{"command":"explain"}`, "explain: no flow"},
		{`{"command":"explain","flow":{"protocol":"gre","source":"10.0.0.1","destination":"20.0.0.1"}}`, `protocol "gre"`},
		{`{"command":"explain","flow":{"protocol":"udp","source":"10.0.0.1","destination":"20.0.0.1","payload":"zz"}}`, "not hexadecimal"},
		{`{"command":"log-level","level":"loud"}`, `log level "loud"`},
		{`not json`, "reading the request"},
	} {
		resp := raw(t, path, []byte(tc.req))
		if resp.Result != nil || !strings.Contains(resp.Error, tc.want) {
			t.Errorf("%.60s: response %+v, want an error saying %q", tc.req, resp, tc.want)
		}
	}
}

// TestSilentClientTimesOut: a client that sends nothing holds the only
// slot (another client is refused) until the timeout cuts it off; then
// the slot is free again.
func TestSilentClientTimesOut(t *testing.T) {
	path := serve(t, WithTimeout(2*time.Second), WithMaxConns(1))
	silent, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// The server accepts in order, so the silent connection has the slot.
	if resp := raw(t, path, []byte(`{"command":"show","topic":"routes"}`)); !strings.Contains(resp.Error, "busy") {
		t.Fatalf("second connection while the slot is taken: %+v, want busy", resp)
	}
	_ = silent.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := silent.Read(make([]byte, 512)); !errors.Is(err, io.EOF) {
		t.Fatalf("silent connection: read %d bytes, %v; want the server to close it", n, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := raw(t, path, []byte(`{"command":"show","topic":"routes"}`))
		if resp.Error == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot was not freed: %+v", resp)
		}
	}
}

func TestSocketPermissions(t *testing.T) {
	gid := os.Getgid()
	if os.Geteuid() == 0 {
		gid = 4242 // root may give the socket any group
	}
	path := serve(t, WithGroup(gid))
	for _, tc := range []struct {
		path string
		mode fs.FileMode
	}{{path, SocketMode | fs.ModeSocket}, {filepath.Dir(path), DirMode | fs.ModeDir}} {
		fi, err := os.Lstat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != tc.mode {
			t.Errorf("%s: mode %v, want %v", tc.path, fi.Mode(), tc.mode)
		}
		if g := groupOf(t, fi); g != gid {
			t.Errorf("%s: group %d, want %d", tc.path, g, gid)
		}
	}
}

// TestOpenDirectoryIsTightened: a directory of ours anyone may write in
// (a Kubernetes emptyDir is 0777) gets DirMode; a sticky one (/tmp) and
// one that is not writable by others are left alone.
func TestOpenDirectoryIsTightened(t *testing.T) {
	for _, tc := range []struct {
		mode, want fs.FileMode
	}{{0o777, DirMode}, {0o777 | fs.ModeSticky, 0o777 | fs.ModeSticky}, {0o755, 0o755}} {
		dir := filepath.Join(t.TempDir(), "run")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, tc.mode); err != nil {
			t.Fatal(err)
		}
		srv, err := Listen(filepath.Join(dir, "admin.sock"), &fakeBackend{})
		if err != nil {
			t.Fatal(err)
		}
		srv.ln.Close()
		if fi, err := os.Stat(dir); err != nil || fi.Mode()&(fs.ModePerm|fs.ModeSticky) != tc.want {
			t.Errorf("directory of mode %v: now %v (%v), want %v", tc.mode, fi.Mode(), err, tc.want)
		}
	}
}

func TestStaleSocketIsReplacedOtherFilesAreNot(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "admin.sock")
	// A socket nobody serves any more: what a killed sllbrd leaves.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	srv, err := Listen(path, &fakeBackend{})
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	// While it is served, a second server must not take it over.
	if _, err := Listen(path, &fakeBackend{}); err == nil || !strings.Contains(err.Error(), "another process is serving it") {
		t.Errorf("second Listen on a live socket: %v", err)
	}
	srv.ln.Close()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(file, &fakeBackend{}); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Listen over a regular file: %v", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "keep me" {
		t.Errorf("the regular file was touched: %q %v", b, err)
	}
	if _, err := Listen("/tmp/"+strings.Repeat("x", 120), &fakeBackend{}); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a path too long for a socket: %v", err)
	}
}

func TestAccess(t *testing.T) {
	groups := func(pid int32) ([]int, error) {
		if pid == 42 {
			return []int{10, 4242}, nil
		}
		return nil, io.ErrUnexpectedEOF
	}
	withGroup := access{euid: 0, gid: 4242, groups: groups}
	noGroup := access{euid: 1000, gid: -1, groups: groups}
	for _, tc := range []struct {
		name  string
		a     access
		p     peer
		allow bool
	}{
		{"root", noGroup, peer{uid: 0, gid: 0}, true},
		{"sllbrd's own user", noGroup, peer{uid: 1000, gid: 1000}, true},
		{"another user, no group configured", noGroup, peer{uid: 1001, gid: 4242, pid: 42}, false},
		{"primary group", withGroup, peer{uid: 1001, gid: 4242}, true},
		{"supplementary group", withGroup, peer{uid: 1001, gid: 1001, pid: 42}, true},
		{"not in the group", withGroup, peer{uid: 1001, gid: 1001, pid: 43}, false},
	} {
		if err := tc.a.allow(tc.p); (err == nil) != tc.allow {
			t.Errorf("%s: allow(%+v) = %v, want allowed %v", tc.name, tc.p, err, tc.allow)
		}
	}
}

func TestProcGroupsReadsOwnGroups(t *testing.T) {
	got, err := procGroups(int32(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("groups %v, want %v", got, want)
	}
}

func TestParseGroup(t *testing.T) {
	if g, err := ParseGroup("4242"); err != nil || g != 4242 {
		t.Errorf("numeric: %d %v", g, err)
	}
	if _, err := ParseGroup("-1"); err == nil {
		t.Error("negative group accepted")
	}
	if _, err := ParseGroup("no-such-group-sllbrd"); err == nil || !strings.Contains(err.Error(), "give its number instead") {
		t.Errorf("unknown name: %v", err)
	}
}

func groupOf(t *testing.T, fi fs.FileInfo) int {
	t.Helper()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("%s: no stat", fi.Name())
	}
	return int(st.Gid)
}
