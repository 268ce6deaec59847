package admin

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// clientEnv makes the test binary a client of the socket it names (see
// TestMain): the access test runs it under other users.
const clientEnv = "SLLBRD_ADMIN_TEST_CLIENT"

func TestMain(m *testing.M) {
	if path := os.Getenv(clientEnv); path != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var r Routes
		if err := Call(ctx, path, Request{Command: CommandShow, Topic: TopicRoutes}, &r); err != nil {
			fmt.Println("refused:", err)
			os.Exit(3)
		}
		fmt.Println("answered generation", r.Generation)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestOtherUsersAreKeptOut runs clients as other users against a socket
// of group 4242: the file permissions keep out a user outside the group,
// members (primary or supplementary group) get answers, and with the
// permissions opened up the peer-credential check still refuses outsiders.
func TestOtherUsersAreKeptOut(t *testing.T) {
	require.Root(t)
	const nobody, group = 65534, 4242
	dir, err := os.MkdirTemp("", "sllbrd-admin-access-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "client")
	copyExecutable(t, bin)
	path := filepath.Join(dir, "run", "admin.sock")
	srv, err := Listen(path, &fakeBackend{}, WithGroup(group))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()

	run := func(gid uint32, groups ...uint32) (string, error) {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), clientEnv+"="+path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: gid, Groups: groups}}
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	for _, tc := range []struct {
		name   string
		gid    uint32
		groups []uint32
		want   string
	}{
		{"outsider", nobody, nil, "permission denied"},
		{"primary group", group, nil, "answered generation 7"},
		{"supplementary group", nobody, []uint32{group}, "answered generation 7"},
	} {
		out, err := run(tc.gid, tc.groups...)
		if !strings.Contains(out, tc.want) {
			t.Errorf("%s: %q (%v), want %q", tc.name, out, err, tc.want)
		}
	}
	// Defence in depth: with the file permissions opened up, the server
	// still refuses a peer outside the group.
	for _, p := range []string{path, filepath.Dir(path)} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := run(nobody); !strings.Contains(out, "sllbrd: permission denied: uid 65534") {
		t.Errorf("outsider through open permissions: %q (%v), want the server's refusal", out, err)
	}
}

func copyExecutable(t *testing.T, dst string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
