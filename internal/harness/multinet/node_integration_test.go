package multinet

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// cniBinDir is where Debian's containernetworking-plugins installs the
// plugins (make deps).
const cniBinDir = "/usr/lib/cni"

// testNode is a node for multinet as containerd would run it: a network
// namespace the test creates (the node's, with the networks' bridges),
// linked to the test's namespace where kube-apiserver listens, the real
// multinet binary and Debian's plugins, and a kubeconfig of a ServiceAccount
// bound to ClusterRoleYAML only.
type testNode struct {
	t       *testing.T
	ctx     context.Context
	ns      string // the node's network namespace
	bin     string // multinet
	conf    []byte // multinet's configuration
	dir     string // cache, log and host-local's leases
	admin   *kubernetes.Clientset
	objects *kubetest.Client
	api     API // multinet's own identity
	seq     atomic.Int32
	// added holds each container's ADD result, passed as prevResult on
	// CHECK and DEL as libcni does.
	added map[string][]byte
}

// newTestNode builds the node: namespaces, link, control plane, CRD, RBAC,
// the binary and its configuration with the default network mn-pods (a
// bridge with one host-local address per family).
func newTestNode(t *testing.T) *testNode {
	require.Root(t)
	require.Programs(t, "ip", "go")
	for _, p := range []string{"bridge", "host-local", "static", "tuning"} {
		if fi, err := os.Stat(filepath.Join(cniBinDir, p)); err != nil || fi.Mode()&0o111 == 0 {
			require.Missing(t, "needs the CNI plugin %s in %s (make deps installs containernetworking-plugins): %v", p, cniBinDir, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	n := &testNode{t: t, ctx: ctx, dir: t.TempDir(), added: map[string][]byte{}}
	n.ns, _ = netns.New(t, "mnnode")
	hostAddr := n.link()
	for _, br := range []string{"mnb0", "mnb1", "mnb2"} {
		netns.In(t, n.ns, "ip", "link", "add", br, "type", "bridge")
		netns.In(t, n.ns, "ip", "link", "set", br, "up")
	}

	sa := kubetest.ServiceAccount("kube-system", "multinet")
	cp := kubetest.StartAt(t, hostAddr, sa)
	var err error
	n.admin, err = kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	if n.objects, err = kubetest.NewClient(cp.AdminConfig()); err != nil {
		t.Fatal(err)
	}
	n.install()
	kubeconfig := cp.Kubeconfig(sa.Name)
	if n.api, err = DialKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}

	n.bin = filepath.Join(n.dir, "multinet")
	if err := BuildPlugin(ctx, n.bin); err != nil {
		t.Fatal(err)
	}
	conf := Config{CNIVersion: CNIVersion, Name: "multinet", Type: TypeName, Kubeconfig: kubeconfig,
		CacheDir: filepath.Join(n.dir, "cache"), LogFile: filepath.Join(n.dir, "log", "multinet.log"),
		DefaultNetwork: json.RawMessage(`{"cniVersion":"1.0.0","name":"mn-pods","plugins":[{"type":"bridge","bridge":"mnb0",
			"ipam":` + n.hostLocal("10.244.0.0/24", "10.244.0.10", "fd00:244::/64", "fd00:244::10") + `}]}`)}
	if n.conf, err = conf.Marshal(); err != nil {
		t.Fatal(err)
	}
	return n
}

// link connects the node's namespace to the test's with a veth pair on a
// /30 of 100.127.0.0/16 derived from the PID (kubetest's API server takes
// IPv4 only; other lab tests use 198.18.0.0/15), and returns the test's
// address.
func (n *testNode) link() netip.Addr {
	pid := os.Getpid()
	base := [4]byte{100, 127, byte(pid >> 6 & 0xff), byte(pid&63) * 4}
	host, node := base, base
	host[3]++
	node[3] += 2
	name := fmt.Sprintf("mnh%d", pid)
	netns.Run(n.t, "ip", "link", "add", name, "type", "veth", "peer", "name", "mnn0", "netns", n.ns)
	n.t.Cleanup(func() { _ = exec.Command("ip", "link", "del", name).Run() })
	netns.Run(n.t, "ip", "addr", "add", netip.AddrFrom4(host).String()+"/30", "dev", name)
	netns.Run(n.t, "ip", "link", "set", name, "up")
	netns.In(n.t, n.ns, "ip", "addr", "add", netip.AddrFrom4(node).String()+"/30", "dev", "mnn0")
	netns.In(n.t, n.ns, "ip", "link", "set", "mnn0", "up")
	netns.In(n.t, n.ns, "ip", "link", "set", "lo", "up")
	return netip.AddrFrom4(host)
}

// hostLocal is host-local IPAM with one address of each family, leases in
// the test's directory.
func (n *testNode) hostLocal(subnet4, addr4, subnet6, addr6 string) string {
	return fmt.Sprintf(`{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":%q,"rangeStart":%q,"rangeEnd":%q}],[{"subnet":%q,"rangeStart":%q,"rangeEnd":%q}]]}`,
		filepath.Join(n.dir, "host-local"), subnet4, addr4, addr4, subnet6, addr6, addr6)
}

// install creates the CRD, the namespaces mn-apps and mn-infra, and the
// ClusterRole bound to multinet's ServiceAccount.
func (n *testNode) install() {
	t := n.t
	crd := filepath.Join(n.dir, "crd.yaml")
	if err := os.WriteFile(crd, CRDYAML(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := n.objects.InstallCRDs(n.ctx, crd); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"mn-apps", "mn-infra"} {
		if _, err := n.admin.CoreV1().Namespaces().Create(n.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	role, err := kubetest.DecodeObjects(ClusterRoleYAML())
	if err != nil || len(role) != 1 {
		t.Fatalf("ClusterRoleYAML: %d objects, %v", len(role), err)
	}
	if _, err := n.objects.Create(n.ctx, "", role[0]); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "multinet"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ClusterRoleName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "multinet", Namespace: "kube-system"}},
	}
	if _, err := n.admin.RbacV1().ClusterRoleBindings().Create(n.ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createNAD creates a NetworkAttachmentDefinition with config.
func (n *testNode) createNAD(namespace, name, config string) {
	n.t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": NADGroup + "/" + NADVersion, "kind": NADKind,
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"config": config},
	}}
	if _, err := n.objects.Create(n.ctx, namespace, obj); err != nil {
		n.t.Fatal(err)
	}
}

// createPod creates a pod (no kubelet runs it) with the networks annotation.
func (n *testNode) createPod(namespace, name, networks string) *corev1.Pod {
	n.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Annotations: map[string]string{NetworksAnnotation: networks}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app"}}},
	}
	created, err := n.admin.CoreV1().Pods(namespace).Create(n.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		n.t.Fatal(err)
	}
	return created
}

// sandbox is a pod's network namespace and container as containerd names
// them to CNI.
type sandbox struct {
	name, netns, container, args string
}

// newSandbox creates a network namespace for pod (uid "" leaves
// K8S_POD_UID out).
func (n *testNode) newSandbox(pod *corev1.Pod, uid string) sandbox {
	name, _ := netns.New(n.t, "mnpod")
	id := fmt.Sprintf("%064x", os.Getpid()*1000+int(n.seq.Add(1)))
	args := fmt.Sprintf("IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s;K8S_POD_INFRA_CONTAINER_ID=%s", pod.Namespace, pod.Name, id)
	if uid != "" {
		args += ";K8S_POD_UID=" + uid
	}
	return sandbox{name: name, netns: filepath.Join(netns.Dir, name), container: id, args: args}
}

// cniResult is multinet's exit status and stdout.
type cniResult struct {
	code int
	out  []byte
}

// cniError returns the CNI error of a failed command.
func (r cniResult) cniError(t *testing.T) (uint, string) {
	t.Helper()
	var e struct {
		Code uint   `json:"code"`
		Msg  string `json:"msg"`
	}
	if err := json.Unmarshal(r.out, &e); r.code == 0 || err != nil {
		t.Fatalf("exit %d, stdout %q: want a CNI error (%v)", r.code, r.out, err)
	}
	return e.Code, e.Msg
}

// cni runs the multinet binary in the node's namespace as containerd
// does: CNI variables, the configuration on stdin.
func (n *testNode) cni(command string, sb sandbox) cniResult {
	n.t.Helper()
	cmd := exec.CommandContext(n.ctx, "ip", "netns", "exec", n.ns, n.bin)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "CNI_COMMAND=" + command, "CNI_CONTAINERID=" + sb.container,
		"CNI_NETNS=" + sb.netns, "CNI_IFNAME=eth0", "CNI_ARGS=" + sb.args, "CNI_PATH=" + cniBinDir}
	conf := n.conf
	if prev, ok := n.added[sb.container]; ok && command != "ADD" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(conf, &obj); err != nil {
			n.t.Fatal(err)
		}
		obj["prevResult"] = prev
		var err error
		if conf, err = json.Marshal(obj); err != nil {
			n.t.Fatal(err)
		}
	}
	cmd.Stdin = strings.NewReader(string(conf))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		n.t.Fatalf("run multinet %s: %v", command, err)
	}
	if stderr.Len() > 0 {
		n.t.Logf("multinet %s stderr: %s", command, stderr.String())
	}
	switch {
	case command == "ADD" && code == 0:
		n.added[sb.container] = out
	case command == "DEL" && code == 0:
		delete(n.added, sb.container)
	}
	return cniResult{code: code, out: out}
}

// mustCNI runs command and fails the test unless it succeeds.
func (n *testNode) mustCNI(command string, sb sandbox) []byte {
	n.t.Helper()
	r := n.cni(command, sb)
	if r.code != 0 {
		n.t.Fatalf("multinet %s: exit %d: %s", command, r.code, r.out)
	}
	return r.out
}

// link is an interface of a namespace: its MAC and addresses (CIDR).
type link struct {
	mac   string
	addrs []string
}

// links returns the interfaces of the named network namespace but lo.
func (n *testNode) links(ns string) map[string]link {
	n.t.Helper()
	var out []struct {
		IfName   string `json:"ifname"`
		Address  string `json:"address"`
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
			Scope     string `json:"scope"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(netns.In(n.t, ns, "ip", "-j", "addr", "show")), &out); err != nil {
		n.t.Fatal(err)
	}
	links := map[string]link{}
	for _, l := range out {
		if l.IfName == "lo" {
			continue
		}
		var addrs []string
		for _, a := range l.AddrInfo {
			if a.Scope != "link" {
				addrs = append(addrs, fmt.Sprintf("%s/%d", a.Local, a.PrefixLen))
			}
		}
		slices.Sort(addrs)
		links[l.IfName] = link{mac: l.Address, addrs: addrs}
	}
	return links
}

// leases returns host-local's leases of network: the addresses it holds.
func (n *testNode) leases(network string) []string {
	n.t.Helper()
	var out []string
	for _, name := range dirNames(n.t, filepath.Join(n.dir, "host-local", network)) {
		if _, err := netip.ParseAddr(name); err == nil {
			out = append(out, name)
		}
	}
	return out
}

// cached returns the files of multinet's cache.
func (n *testNode) cached() []string {
	n.t.Helper()
	return dirNames(n.t, filepath.Join(n.dir, "cache"))
}

// status returns the pod's network-status annotation ("" when absent).
func (n *testNode) status(pod *corev1.Pod) string {
	n.t.Helper()
	p, err := n.admin.CoreV1().Pods(pod.Namespace).Get(n.ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		n.t.Fatal(err)
	}
	return p.Annotations[NetworkStatusAnnotation]
}

// nodeVeths returns the veth ends of pods left in the node's namespace.
func (n *testNode) nodeVeths() []string {
	n.t.Helper()
	var out []string
	for name := range n.links(n.ns) {
		if strings.HasPrefix(name, "veth") {
			out = append(out, name)
		}
	}
	return out
}
