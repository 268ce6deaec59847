package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/images"
	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/multinet"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// TestIntegrationNodeUpDown brings the node up twice in a row (the second
// Up takes the first node down), runs a pod on all three networks, and
// takes the node down: nothing of it is left on the host. It refuses to run
// while a node of make node-up is up, which it would take down.
func TestIntegrationNodeUpDown(t *testing.T) {
	require.Lab(t)
	require.Programs(t, "containerd", "runc", "ctr", "iptables")
	bin := kubetest.RequireNodeAssets(t)
	dirs, err := DefaultDirs()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if n, err := Open(dirs, t); err == nil && n.Check(ctx) == nil {
		t.Fatalf("a node is up in %s (make node-up): this test would take it down; make node-down first", dirs.State)
	}
	repo, err := e2e.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	set, err := images.Build(ctx, images.Options{Dir: filepath.Join(repo, "bin", "node-images"), ModuleDir: repo})
	if err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(t.TempDir(), multinet.TypeName)
	if err := multinet.BuildPlugin(ctx, plugin); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := Down(context.Background(), dirs, t); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	o := Options{Dirs: dirs, Bin: bin, Multinet: plugin, Pause: Image{Archive: set.Pause.Archive, Ref: set.Pause.Ref}, Log: t}
	for i := range 2 {
		start := time.Now()
		if _, err := Up(ctx, o); err != nil {
			t.Fatalf("up %d: %v", i+1, err)
		}
		t.Logf("up %d: %v", i+1, time.Since(start).Round(time.Millisecond))
	}
	n, err := Open(dirs, t)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Check(ctx); err != nil {
		t.Fatal(err)
	}
	runPodOnEveryNetwork(ctx, t, n, set.Pause.Ref)
	start := time.Now()
	if err := Down(ctx, dirs, t); err != nil {
		t.Fatal(err)
	}
	t.Logf("down: %v", time.Since(start).Round(time.Millisecond))
	assertNothingLeft(ctx, t, dirs)
	if err := Down(ctx, dirs, t); err != nil {
		t.Errorf("a second down: %v", err)
	}
}

// runPodOnEveryNetwork runs a pod of the pause image attached to both
// NADs and checks the addresses multinet reports, and that they are on its
// interfaces.
func runPodOnEveryNetwork(ctx context.Context, t *testing.T, n *Node, image string) {
	client, err := n.Client()
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "every-network", Namespace: Namespace, Annotations: map[string]string{
			multinet.NetworksAnnotation: `[{"name":"` + GatewayNetwork.NAD + `","interface":"vlan-100"},{"name":"` + TargetNetwork.NAD + `","interface":"net1"}]`,
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: image, ImagePullPolicy: corev1.PullNever}}},
	}
	if _, err := client.CoreV1().Pods(Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	err = n.poll(ctx, "the pod Ready", nil, 2*time.Minute, func(ctx context.Context) (bool, error) {
		got, err = client.CoreV1().Pods(Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, fmt.Errorf("phase %s", got.Status.Phase)
	})
	if err != nil {
		t.Fatal(err)
	}
	var status []multinet.NetworkStatus
	if err := json.Unmarshal([]byte(got.Annotations[multinet.NetworkStatusAnnotation]), &status); err != nil {
		t.Fatalf("network-status: %v", err)
	}
	pid, err := n.ContainerPID(ctx, got.Status.ContainerStatuses[0].ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Network{"eth0": PodNetwork, "vlan-100": GatewayNetwork, "net1": TargetNetwork}
	for _, s := range status {
		nw, ok := want[s.Interface]
		if !ok || len(s.IPs) != len(nw.Subnets) {
			t.Errorf("network-status entry %+v", s)
			continue
		}
		delete(want, s.Interface)
		out, err := exec.CommandContext(ctx, "nsenter", "-t", fmt.Sprint(pid), "-n", "ip", "addr", "show", "dev", s.Interface).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", s.Interface, err, out)
		}
		for i, ip := range s.IPs {
			if a := net.ParseIP(ip); a == nil || !nw.Subnets[i].Contains(mustAddr(ip)) || !strings.Contains(string(out), ip+"/") {
				t.Errorf("%s: %s not in %v or not on the interface: %s", s.Interface, ip, nw.Subnets, out)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("no network-status for %v: %s", want, got.Annotations[multinet.NetworkStatusAnnotation])
	}
}

// assertNothingLeft checks the host after Down: no process of the node, no
// mount under its directories, no bridge, no cgroup, no kube-proxy table,
// no kubelet chain, no directory.
func assertNothingLeft(ctx context.Context, t *testing.T, dirs Dirs) {
	t.Helper()
	for _, d := range []string{dirs.State, dirs.Run} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", d, err)
		}
	}
	points, err := mountPoints()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range points {
		if strings.HasPrefix(p, dirs.State) || strings.HasPrefix(p, dirs.Run) {
			t.Errorf("mount %s is left", p)
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && (strings.Contains(string(cmdline), dirs.State) || strings.Contains(string(cmdline), dirs.Run)) {
			t.Errorf("process %s is left: %s", e.Name(), strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	for _, nw := range Networks() {
		if linkExists(nw.Bridge) {
			t.Errorf("bridge %s is left", nw.Bridge)
		}
	}
	mounts, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		if _, err := os.Stat(filepath.Join(m, cgroupParent)); !os.IsNotExist(err) {
			t.Errorf("cgroup %s%s is left", m, cgroupParent)
		}
	}
	for _, fam := range []string{"ip", "ip6"} {
		if exec.CommandContext(ctx, "nft", "list", "table", fam, "kube-proxy").Run() == nil {
			t.Errorf("nftables table %s kube-proxy is left", fam)
		}
	}
	for _, bin := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle"} {
			out, _ := exec.CommandContext(ctx, bin, "-w", "-t", table, "-S").Output()
			if strings.Contains(string(out), "KUBE-") {
				t.Errorf("%s -t %s has the kubelet's chains: %s", bin, table, out)
			}
		}
	}
}
