package main

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab/responder"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// TestIntegrationExitsCleanlyOnSIGTERM runs the built command on loopback
// with its name from $POD_NAME, gets an answer, holds an echo connection
// open, and wants exit status 0 soon after SIGTERM.
func TestIntegrationExitsCleanlyOnSIGTERM(t *testing.T) {
	require.Integration(t)
	require.Programs(t, "go")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root, err := e2e.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := e2e.BuildReleaseOf(ctx, root, "./internal/harness/lab/cmd/labresponder", filepath.Join(t.TempDir(), "labresponder"))
	if err != nil {
		t.Fatal(err)
	}
	udp, echo := freePort(t, "udp"), freePort(t, "tcp")
	cmd := exec.Command(bin, "-addr", "127.0.0.1", "-udp", strconv.Itoa(udp), "-echo", strconv.Itoa(echo))
	cmd.Env = append(os.Environ(), "POD_NAME=pod-b")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // by PID; a no-op once it has exited
		<-exited
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		if line != "ready\n" {
			t.Fatalf("first line %q, want ready (stderr %q)", line, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no ready line in 30 s")
	}

	r := ask(t, "udp", udp)
	if r.Target != "pod-b" {
		t.Errorf("udp reply %+v, want target pod-b from $POD_NAME", r)
	}
	held := dial(t, "tcp", echo)
	defer held.Close()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("after SIGTERM: %v, want exit status 0 (stderr %q)", waitErr, stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still running 5 s after SIGTERM")
	}
}

func dial(t *testing.T, proto string, port int) net.Conn {
	t.Helper()
	c, err := net.DialTimeout(proto, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if proto == "udp" {
		if _, err := c.Write([]byte("hi")); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// ask sends one request and returns the parsed reply.
func ask(t *testing.T, proto string, port int) responder.Reply {
	t.Helper()
	c := dial(t, proto, port)
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("%s %d: %v", proto, port, err)
	}
	r, err := responder.ParseReply(line)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func freePort(t *testing.T, proto string) int {
	t.Helper()
	if proto == "udp" {
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
