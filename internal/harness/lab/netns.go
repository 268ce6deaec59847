package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
)

// NSPrefix starts the name of every namespace a lab creates.
const NSPrefix = "sllbrd-lab-"

const (
	commandTimeout = 20 * time.Second
)

// run runs a command on the host with a timeout and returns its stdout; the
// error carries stderr.
func run(ctx context.Context, name string, args ...string) (string, error) {
	return runInput(ctx, "", name, args...)
}

// runInput is run with stdin as the command's standard input.
func runInput(ctx context.Context, stdin, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = strings.NewReader(stdin)
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "),
			err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// runIn runs a command inside the namespace ns through `ip netns exec`.
func runIn(ctx context.Context, ns string, args ...string) (string, error) {
	return run(ctx, "ip", append([]string{"netns", "exec", ns}, args...)...)
}

// ip runs `ip -n ns args...`.
func ip(ctx context.Context, ns string, args ...string) error {
	_, err := run(ctx, "ip", append([]string{"-n", ns}, args...)...)
	return err
}

// sysctl sets "key=value" settings inside ns in one process.
func sysctl(ctx context.Context, ns string, settings ...string) error {
	_, err := runIn(ctx, ns, append([]string{"sysctl", "-q", "-w"}, settings...)...)
	return err
}

func addNetns(ctx context.Context, ns string) error {
	_, err := run(ctx, "ip", "netns", "add", ns)
	return err
}

// deleteNetns deletes ns by name; a namespace that does not exist is no error.
func deleteNetns(ctx context.Context, ns string) error {
	if _, err := os.Stat(filepath.Join(netns.Dir, ns)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	_, err := run(ctx, "ip", "netns", "delete", ns)
	return err
}

// ListNetns returns the names of existing namespaces starting with prefix.
func ListNetns(prefix string) ([]string, error) {
	entries, err := os.ReadDir(netns.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// netnsPIDs returns the PIDs of processes living in ns.
func netnsPIDs(ctx context.Context, ns string) ([]int, error) {
	out, err := run(ctx, "ip", "netns", "pids", ns)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(out) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// InNetns runs fn on an OS thread switched into namespace ns (see netns.Do).
func InNetns(ns string, fn func() error) error { return netns.Do(ns, fn) }
