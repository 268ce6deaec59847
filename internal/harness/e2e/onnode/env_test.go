package onnode

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/node"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// The objects of the scenario: deploy/ installs into node.Namespace, the
// seed's Gateway is sllb-a, and the controller names its Deployment after
// the template (deploy/sllbrd/deployment.yaml).
const (
	ns             = node.Namespace
	gatewayName    = "sllb-a"
	sllbrName      = "sllbrd-sllb-a"
	controllerName = "sllbrd-controller"
	appName        = "example-target-application-multi"
	// The ports the seed's L34Routes route (TCP 4000, 4001) and those of
	// the routes the test adds (UDP 5000, SCTP 6000); 4001 carries the
	// long-lived echo connections.
	flowPort = 4000
	echoPort = 4001
	udpPort  = 5000
	sctpPort = 6000
)

// The seed's VIPs.
var (
	vip4 = netip.MustParseAddr("20.0.0.1")
	vip6 = netip.MustParseAddr("2001:db8::1")
	vips = []netip.Addr{vip4, vip6}
)

// env is the node, the lab attached to it, and clients of both.
type env struct {
	t       *testing.T
	ctx     context.Context
	repo    string
	dir     string // overlays and other files of the test
	node    *node.Node
	kube    kubernetes.Interface
	dyn     *kubetest.Client
	kubectl string
	images  nodeImages
	lab     *lab.Lab
	bird    *lab.BIRD
	// records are the figures the test reports at its end.
	records []string
}

// newEnv brings up (or reuses) the node, builds and imports the images,
// and attaches a gateway-only lab with BIRD to the node's gateway bridge.
func newEnv(t *testing.T) *env {
	require.Lab(t)
	require.Programs(t, "containerd", "runc", "ctr", "iptables", "nsenter")
	bin := kubetest.RequireNodeAssets(t)
	repo, err := e2e.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, repo: repo, dir: t.TempDir(), kubectl: filepath.Join(bin, "kubectl")}
	t0 := time.Now()
	e.images = buildImages(t, ctx, repo, e.dir)
	e.record("images and multinet built", time.Since(t0))
	dirs, err := node.DefaultDirs()
	if err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	if n, err := node.Open(dirs, t); err == nil && n.Check(ctx) == nil {
		t.Logf("using the node that is up in %s (make node-up); it stays up, without what the test applies", dirs.State)
		for _, im := range []node.Image{e.images.sllbrd, e.images.responder} {
			if err := n.ImportImage(ctx, im); err != nil {
				t.Fatal(err)
			}
		}
		e.node = n
		t.Cleanup(e.deleteApplied)
	} else {
		t.Cleanup(func() {
			if err := node.Down(context.Background(), dirs, t); err != nil {
				t.Errorf("node down: %v", err)
			}
		})
		e.node, err = node.Up(ctx, node.Options{
			Dirs: dirs, Bin: bin, Multinet: e.images.multinet, Pause: e.images.pause,
			Images: []node.Image{e.images.sllbrd, e.images.responder}, Log: t,
		})
		if err != nil {
			t.Fatal(err)
		}
		e.record("node up", time.Since(t0))
	}
	if e.kube, err = e.node.Client(); err != nil {
		t.Fatal(err)
	}
	cfg, err := e.node.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	if e.dyn, err = kubetest.NewClient(cfg); err != nil {
		t.Fatal(err)
	}
	e.attachLab()
	return e
}

// attachLab builds the DC gateway and the client, trunks the gateway
// network to the node's gateway bridge and starts BIRD peering with every
// address an SLLBR pod may get there (BGP + BFD, the GatewayRouters'
// timers).
func (e *env) attachLab() {
	l, err := lab.New(e.ctx, lab.Options{GatewayOnly: true, VIPs: vips, Logger: e.t})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		if err := l.Close(); err != nil {
			e.t.Errorf("lab close: %v", err)
		}
	})
	e.lab = l
	if err := l.Trunk(e.ctx, lab.GatewayLink, node.GatewayNetwork.Bridge, "sl-gw-"+l.RunID()); err != nil {
		e.t.Fatal(err)
	}
	cfg := lab.BIRDConfig{
		Neighbors: append(node.GatewayNetwork.PodAddresses(false), node.GatewayNetwork.PodAddresses(true)...),
		BFD:       &lab.BFDConfig{MinRx: 300 * time.Millisecond, MinTx: 300 * time.Millisecond, Multiplier: 5},
	}
	if e.bird, err = l.StartBIRD(e.ctx, cfg); err != nil {
		e.t.Fatal(err)
	}
}

// deleteApplied deletes what the test applied, newest first, and gives the
// kubelet back sllbrd's sysctls: a node the test did not bring up stays up
// as the test found it.
func (e *env) deleteApplied() {
	if !slices.Equal(e.node.AllowedUnsafeSysctls(), node.SLLBRSysctls) {
		if err := e.node.SetUnsafeSysctls(context.Background(), true); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
	}
	for _, args := range [][]string{
		{"delete", "-k", filepath.Join(e.dir, "node-daemon-cleanup")},
		{"delete", "-k", filepath.Join(e.dir, "node-daemon")},
		{"delete", "-k", filepath.Join(e.dir, "app-node")},
		{"delete", "-k", filepath.Join(e.dir, "app")},
		{"delete", "-f", filepath.Join(e.dir, "routes.yaml")},
		{"delete", "-f", filepath.Join(e.repo, "deploy", "examples")},
		{"delete", "-k", filepath.Join(e.dir, "deploy")},
	} {
		if _, err := os.Stat(args[2]); err != nil {
			continue // not applied
		}
		if _, err := e.tryRun(e.kubectl, append(args, "--ignore-not-found", "--wait=true", "--timeout=2m")...); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
	}
	e.deleteFailedPods()
}

// run runs a program and returns its standard output; failures end the
// test with its standard error.
func (e *env) run(name string, args ...string) string {
	e.t.Helper()
	out, err := e.tryRun(name, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) tryRun(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(e.ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.node.Kubeconfig())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.String(), nil
}

// k runs kubectl as the administrator.
func (e *env) k(args ...string) string {
	e.t.Helper()
	return e.run(e.kubectl, args...)
}

// record keeps a figure for the report at the end and logs it.
func (e *env) record(what string, d time.Duration) {
	line := fmt.Sprintf("%-60s %v", what, d.Round(time.Millisecond))
	e.records = append(e.records, line)
	e.t.Log(line)
}

// waitFor polls cond every 250 ms until it holds or limit passes (then the
// test fails with cond's last word) and returns how long it took.
func (e *env) waitFor(limit time.Duration, what string, cond func() (bool, string)) time.Duration {
	e.t.Helper()
	start := time.Now()
	var last string
	for {
		ok, why := cond()
		if ok {
			return time.Since(start)
		}
		last = why
		if time.Since(start) > limit {
			e.t.Fatalf("%s: not within %v (last: %s)", what, limit, last)
		}
		select {
		case <-e.ctx.Done():
			e.t.Fatalf("%s: %v (last: %s)", what, e.ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// writeFile writes a file of the test's directory and returns its path.
func (e *env) writeFile(rel, content string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}
