package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// controllerProc is `sllbrd controller` running on the host.
type controllerProc struct {
	cmd     *exec.Cmd
	addr    string // admin endpoint
	pprof   string // --pprof-address (the soak reads the live heap there)
	logPath string
	done    chan struct{}
	err     error
}

// buildSllbrd builds the binary once per test run (labSetup shares it).
func buildSllbrd(t testing.TB) string {
	t.Helper()
	if sllbrdBinary == "" {
		root, err := e2e.ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir, err := os.MkdirTemp("", "sllbrd-bin-")
		if err != nil {
			t.Fatal(err)
		}
		sllbrdBinaryDir = dir
		build := e2e.Build
		if raceEnabled { // the test runs with -race: so do the processes it starts
			build = e2e.BuildRace
		}
		if sllbrdBinary, err = build(context.Background(), root, dir); err != nil {
			t.Fatal(err)
		}
	}
	return sllbrdBinary
}

// hostSLLBRImage is the image `sllbrd controller` on the host gives the
// SLLBR Deployments (it runs in no pod to take its own from).
const hostSLLBRImage = "registry.example.org/sllbrd:v0.0.0-host"

// startControllerProc runs `sllbrd controller` with the kubeconfig, in
// namespace ns, with short leader-election timings and --sllbr-image, its
// admin endpoint and pprof on free loopback ports; it is killed (by PID)
// when the test ends if still running.
func startControllerProc(t *testing.T, kubeconfig, ns string, extra ...string) *controllerProc {
	t.Helper()
	return startControllerProcEnv(t, nil, kubeconfig, ns, append([]string{"--sllbr-image", hostSLLBRImage}, extra...)...)
}

// startControllerProcEnv is startControllerProc with env (NAME=value)
// added to the environment, without --sllbr-image.
func startControllerProcEnv(t *testing.T, env []string, kubeconfig, ns string, extra ...string) *controllerProc {
	t.Helper()
	ports := freeLoopbackPorts(t, 2) // replicas share the host's namespace: ports of their own each
	addr := ports[0]
	p := &controllerProc{addr: addr, pprof: ports[1], logPath: filepath.Join(t.TempDir(), "controller.log"), done: make(chan struct{})}
	log, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"controller", "--kubeconfig", kubeconfig, "--namespace", ns, "--metrics-address", addr, "--pprof-address", p.pprof,
		"--leader-election-lease-duration=8s", "--leader-election-renew-deadline=6s", "--leader-election-retry-period=250ms"}, extra...)
	p.cmd = exec.Command(buildSllbrd(t), args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		log.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			b, _ := os.ReadFile(p.logPath)
			t.Logf("sllbrd controller %s log:\n%s", addr, tail(b, 4000))
		}
	})
	return p
}

// freeLoopbackPorts returns n distinct addresses 127.0.0.1:PORT that were
// free: all are held open until all are chosen, so that none is chosen twice.
func freeLoopbackPorts(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// get fetches a path of the admin endpoint.
func (p *controllerProc) get(path string) (int, string, error) {
	return getHTTP("http://"+p.addr+path, 2*time.Second)
}

// getPprof fetches a path of the replica's pprof, as e2e.GetIn does an
// SLLBR's (5 s: a heap profile may first collect the garbage).
func (p *controllerProc) getPprof(path string) (int, string, error) {
	return getHTTP("http://"+p.pprof+path, 5*time.Second)
}

// getHTTP fetches url within timeout.
func getHTTP(url string, timeout time.Duration) (int, string, error) {
	c := http.Client{Timeout: timeout}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// metric returns the value of an unlabelled metric, -1 when unreadable.
func (p *controllerProc) metric(name string) float64 {
	_, body, err := p.get("/metrics")
	if err != nil {
		return -1
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
	}
	return -1
}

// waitUntil polls ok every 20ms for up to 30s.
func waitUntil(t *testing.T, what string, ok func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !ok() {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// sigterm stops the process as kubelet does and waits for its exit.
func (p *controllerProc) sigterm(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("sllbrd controller exited with %v after SIGTERM", p.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("sllbrd controller did not exit within 20s of SIGTERM")
	}
}

// TestIntegrationControllerBinary runs `sllbrd controller` twice as the
// ServiceAccount of deploy/controller: the first leads (/readyz, the leader
// metric, the Lease), the second stands by; SIGTERM to the leader releases
// the Lease before the process exits and the standby takes over.
func TestIntegrationControllerBinary(t *testing.T) {
	const ns = "sllbrd-ctl-bin"
	ctx, kube, _, kubeconfig := startControllerAPI(t, ns)

	first := startControllerProc(t, kubeconfig, ns)
	waitUntil(t, "first ready and leading", func() bool {
		status, _, _ := first.get("/readyz")
		return status == 200 && first.metric("sllbrd_controller_leader") == 1
	})
	holder := leaseHolder(ctx, t, kube, ns)
	if holder == "" {
		t.Fatalf("the leader holds no Lease")
	}
	second := startControllerProc(t, kubeconfig, ns)
	waitUntil(t, "second ready", func() bool { status, _, _ := second.get("/readyz"); return status == 200 })
	if second.metric("sllbrd_controller_leader") != 0 {
		t.Fatalf("two leaders")
	}

	stopping := time.Now()
	first.sigterm(t)
	exited := time.Since(stopping)
	// The Lease is released before the process ends: at once nobody or the
	// standby holds it, never the stopped leader.
	if h := leaseHolder(ctx, t, kube, ns); h == holder {
		t.Errorf("the stopped leader %s still holds the Lease", holder)
	}
	took := waitUntil(t, "second leads", func() bool { return second.metric("sllbrd_controller_leader") == 1 })
	t.Logf("SIGTERM -> leader exited in %v; the standby led %v after the SIGTERM", exited.Round(time.Millisecond), (exited + took).Round(time.Millisecond))
	second.sigterm(t)
	if h := leaseHolder(ctx, t, kube, ns); h != "" {
		t.Errorf("after the last SIGTERM the Lease is held by %q", h)
	}
}

// TestIntegrationControllerBinaryImage: `sllbrd controller` on the shipped
// template (which names no image) gives the SLLBR Deployment the image of
// its own pod ($POD_NAME, read as deploy/controller's ServiceAccount), or
// --sllbr-image; without either it exits at start with an error that says
// what to do.
func TestIntegrationControllerBinaryImage(t *testing.T) {
	const ns = "sllbrd-ctl-image"
	ctx, kube, client, kubeconfig := startControllerAPI(t, ns)
	var examples []string
	for _, f := range []string{"gatewayclass", "gateway", "sllbrconfig"} {
		examples = append(examples, filepath.Join(deployDir, "examples", f+".yaml"))
	}
	if err := client.CreateFiles(ctx, ns, examples...); err != nil {
		t.Fatal(err)
	}
	noPod := []string{"POD_NAME=", "POD_NAMESPACE="}

	t.Run("neither pod nor image", func(t *testing.T) {
		cmd := exec.CommandContext(ctx, buildSllbrd(t), "controller", "--kubeconfig", kubeconfig, "--namespace", ns, "--metrics-address", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), noPod...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("exit %v, want status 1; output:\n%s", err, tail(out, 2000))
		}
		for _, part := range []string{"names no image", "POD_NAME", "--sllbr-image", "name an image in the template"} {
			if !strings.Contains(string(out), part) {
				t.Errorf("the error does not say %q:\n%s", part, tail(out, 2000))
			}
		}
	})

	image := func(want string) func() bool {
		return func() bool {
			d, err := kube.AppsV1().Deployments(ns).Get(ctx, "sllbrd-sllb-a", metav1.GetOptions{})
			return err == nil && d.Spec.Template.Spec.Containers[0].Image == want
		}
	}
	t.Run("its own pod", func(t *testing.T) {
		const own = "registry.example.org/sllbrd:v3.0.0"
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sllbrd-controller-7d9f-x2"}, Spec: corev1.PodSpec{
			ServiceAccountName: "sllbrd-controller", Containers: []corev1.Container{{Name: DefaultControllerContainer, Image: own}}}}
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := startControllerProcEnv(t, append(noPod, "POD_NAME="+pod.Name, "POD_NAMESPACE="+ns), kubeconfig, ns)
		waitUntil(t, "the SLLBR Deployment with the controller's own image", image(own))
		p.sigterm(t)
	})

	t.Run("--sllbr-image", func(t *testing.T) {
		p := startControllerProcEnv(t, noPod, kubeconfig, ns, "--sllbr-image", hostSLLBRImage)
		waitUntil(t, "the SLLBR Deployment with --sllbr-image", image(hostSLLBRImage))
		p.sigterm(t)
	})
}

// startControllerAPI starts a kube-apiserver with deploy/controller
// installed in ns (installController) and returns a context that ends with
// the test, the admin's clients and the kubeconfig of the controller's
// ServiceAccount.
func startControllerAPI(t *testing.T, ns string) (context.Context, kubernetes.Interface, *kubetest.Client, string) {
	t.Helper()
	require.Integration(t)
	sa := kubetest.ServiceAccount(ns, "sllbrd-controller")
	cp := kubetest.Start(t, sa)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	kube := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	client := installController(ctx, t, cp, kube, ns)
	return ctx, kube, client, cp.Kubeconfig(sa.Name)
}

func leaseHolder(ctx context.Context, t *testing.T, kube kubernetes.Interface, ns string) string {
	t.Helper()
	l, err := kube.CoordinationV1().Leases(ns).Get(ctx, "sllbrd-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Lease: %v", err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// installController creates the namespace, the CRDs (sllbrd's and the
// Gateway API's) and deploy/controller's RBAC with the ClusterRoleBinding
// pointing at the namespace, as `kubectl apply -k deploy/` would.
func installController(ctx context.Context, t *testing.T, cp *kubetest.ControlPlane, kube kubernetes.Interface, ns string) *kubetest.Client {
	t.Helper()
	client, err := kubetest.NewClient(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	if err := client.InstallAllCRDs(ctx, deployDir); err != nil {
		t.Fatalf("install CRDs: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(deployDir, "controller", "*role*.yaml"))
	if err := client.CreateFiles(ctx, ns, append(files, filepath.Join(deployDir, "controller", "service_account.yaml"))...); err != nil {
		t.Fatal(err)
	}
	return client
}
