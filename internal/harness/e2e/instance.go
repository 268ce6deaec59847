package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// MetricsAddress is where instances serve /metrics inside their namespace.
const MetricsAddress = "127.0.0.1:9100"

// Build compiles cmd/sllbrd from the module at root into dir and returns
// the binary's path.
func Build(ctx context.Context, root, dir string) (string, error) {
	return goBuild(ctx, root, "./cmd/sllbrd", filepath.Join(dir, "sllbrd"))
}

// BuildRace compiles cmd/sllbrd with the race detector (which needs cgo)
// into dir and returns the binary's path: a data race in any role then
// ends the process with the race report in its log.
func BuildRace(ctx context.Context, root, dir string) (string, error) {
	return goBuildEnv(ctx, root, "./cmd/sllbrd", filepath.Join(dir, "sllbrd"), "CGO_ENABLED=1", "-race")
}

// BuildRelease compiles cmd/sllbrd like `make build` and the image do
// (static, -trimpath, no symbol table or DWARF) into dir/sllbrd-release:
// the binary whose memory is measured.
func BuildRelease(ctx context.Context, root, dir string) (string, error) {
	return BuildReleaseOf(ctx, root, "./cmd/sllbrd", filepath.Join(dir, "sllbrd-release"))
}

// BuildReleaseOf compiles the module's package pkg (e.g. "./cmd/sllbrd") as
// BuildRelease does, to bin, and returns bin.
func BuildReleaseOf(ctx context.Context, root, pkg, bin string) (string, error) {
	return goBuild(ctx, root, pkg, bin, "-trimpath", "-ldflags=-s -w")
}

// goBuild compiles the package pkg of the module at root, statically
// (CGO_ENABLED=0) and with flags, to bin, and returns bin.
func goBuild(ctx context.Context, root, pkg, bin string, flags ...string) (string, error) {
	return goBuildEnv(ctx, root, pkg, bin, "CGO_ENABLED=0", flags...)
}

// goBuildEnv is goBuild with cgo set by cgo ("CGO_ENABLED=0" or "=1").
func goBuildEnv(ctx context.Context, root, pkg, bin, cgo string, flags ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", append(append([]string{"build"}, flags...), "-o", bin, pkg)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), cgo)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// ModuleRoot finds the directory holding go.mod, from the working directory up.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Instance is one sllbrd running in a lab node.
type Instance struct {
	Lab  *lab.Lab
	Node string
	Proc *lab.Process
	// AdminSocket is the instance's admin socket (sllbrd show, explain,
	// log-level): one per instance in the lab's directory, so instances
	// never share the default one.
	AdminSocket string
}

// Start runs bin in node with the manifests at path for Gateway sllb-a, one
// queue per CPU, and extra flags.
func Start(l *lab.Lab, node, bin, manifests string, extra ...string) (*Instance, error) {
	return StartWithArgs(l, node, bin, append([]string{"--manifests", manifests}, extra...)...)
}

// StartWithArgs runs bin in node for Gateway sllb-a, one queue per CPU,
// with args choosing the configuration source (e.g. "--kubeconfig", path,
// "--namespace", ns) and any other flags.
func StartWithArgs(l *lab.Lab, node, bin string, args ...string) (*Instance, error) {
	return StartInCgroup(l, node, bin, nil, args...)
}

// StartInCgroup is StartWithArgs with sllbrd in the memory cgroup cg (none
// when nil), charged for its memory as a container would be.
func StartInCgroup(l *lab.Lab, node, bin string, cg *lab.MemCgroup, args ...string) (*Instance, error) {
	socket := filepath.Join(l.TempDir(), "admin-"+node+".sock")
	argv := append([]string{bin, "--gateway", "sllb-a", "--metrics-address", MetricsAddress, "--drain", "1s",
		"--log-level", "debug", "--admin-socket", socket}, args...)
	p, err := l.StartInCgroup(node, "sllbrd-"+node, cg, argv...)
	if err != nil {
		return nil, err
	}
	return &Instance{Lab: l, Node: node, Proc: p, AdminSocket: socket}, nil
}

// Get fetches path from the instance's admin endpoint, from inside its
// namespace.
func (i *Instance) Get(path string) (status int, body string, err error) {
	return GetIn(i.Lab, i.Node, MetricsAddress, path)
}

// GetAt fetches path from addr inside the instance's namespace (e.g. its
// --pprof-address).
func (i *Instance) GetAt(addr, path string) (status int, body string, err error) {
	return GetIn(i.Lab, i.Node, addr, path)
}

// GetIn fetches path from the HTTP endpoint addr inside node's namespace
// (a plain HTTP/1.0 exchange on a socket made there).
func GetIn(l *lab.Lab, node, addr, path string) (status int, body string, err error) {
	err = l.Do(node, func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.0\r\nHost: sllbrd\r\n\r\n", path); err != nil {
			return err
		}
		r := bufio.NewReader(c)
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if _, err := fmt.Sscanf(line, "HTTP/1.%d %d", new(int), &status); err != nil {
			return fmt.Errorf("status line %q: %w", line, err)
		}
		b, err := io.ReadAll(r)
		if _, rest, ok := strings.Cut(string(b), "\r\n\r\n"); ok {
			body = rest
		}
		return err
	})
	return status, body, err
}

// Metric returns the value of the sample whose name and labels start with
// prefix (e.g. `sllbrd_packets_total{reason="balanced"}`), summing every
// match; found is false when none matches.
func (i *Instance) Metric(prefix string) (value float64, found bool, err error) {
	_, body, err := i.Get("/metrics")
	if err != nil {
		return 0, false, err
	}
	for line := range strings.SplitSeq(body, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, false, fmt.Errorf("metric line %q: %w", line, err)
		}
		value, found = value+v, true
	}
	return value, found, nil
}

// WaitProgrammed waits until the instance reports generation gen (or later)
// applied and is ready.
func (i *Instance) WaitProgrammed(ctx context.Context, gen uint64) error {
	var last string
	for {
		if i.Proc != nil {
			select {
			case <-i.Proc.Done():
				return fmt.Errorf("sllbrd in %s exited: %v (log %s)", i.Node, i.Proc.Err(), i.Proc.LogPath)
			default:
			}
		}
		v, ok, err := i.Metric("sllbrd_config_last_applied_generation")
		status, body, herr := i.Get("/readyz")
		if err == nil && herr == nil && ok && uint64(v) >= gen && status == 200 {
			return nil
		}
		last = fmt.Sprintf("generation %v (found %v, err %v), readyz %d %q (err %v)", v, ok, err, status, strings.TrimSpace(body), herr)
		select {
		case <-ctx.Done():
			return fmt.Errorf("sllbrd in %s did not program generation %d: %s", i.Node, gen, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
