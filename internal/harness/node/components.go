package node

import (
	"fmt"
	"path/filepath"
	"strings"
)

// The daemons of the node, in start order. Each one's arguments name the
// state or run directory (daemon.owns relies on it).

func (n *Node) etcd() daemon {
	client := fmt.Sprintf("http://127.0.0.1:%d", etcdClientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", etcdPeerPort)
	return daemon{name: "etcd", path: filepath.Join(n.st.Bin, "etcd"), args: []string{
		"--name=" + Name, "--data-dir=" + filepath.Join(n.dirs.State, "etcd"),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=" + Name + "=" + peer,
		"--listen-metrics-urls=", "--log-level=warn",
	}}
}

func (n *Node) apiserver() daemon {
	p := n.dirs.pki
	return daemon{name: "kube-apiserver", path: filepath.Join(n.st.Bin, "kube-apiserver"), args: []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", etcdClientPort),
		"--bind-address=" + NodeIP.String(), "--advertise-address=" + NodeIP.String(),
		fmt.Sprintf("--secure-port=%d", APIServerPort),
		"--tls-cert-file=" + p("apiserver.crt"), "--tls-private-key-file=" + p("apiserver.key"),
		"--client-ca-file=" + p("ca.crt"),
		"--kubelet-client-certificate=" + p("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + p("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority=" + p("ca.crt"),
		"--kubelet-preferred-address-types=InternalIP",
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p("sa.key"), "--service-account-signing-key-file=" + p("sa.key"),
		"--service-cluster-ip-range=" + ServiceCIDR.String(),
		// No pod of this node may be privileged: the API server refuses one
		// (sllbrd's documented privileges are capabilities and sysctls).
		"--allow-privileged=false",
		"--cert-dir=" + filepath.Join(n.dirs.State, "apiserver-certs"),
		"--profiling=false", "--v=1",
	}}
}

func (n *Node) controllerManager() daemon {
	kc := n.dirs.pki(kcmID.file + ".kubeconfig")
	return daemon{name: "kube-controller-manager", path: filepath.Join(n.st.Bin, "kube-controller-manager"), args: []string{
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--service-account-private-key-file=" + n.dirs.pki("sa.key"),
		"--root-ca-file=" + n.dirs.pki("ca.crt"),
		"--cluster-signing-cert-file=" + n.dirs.pki("ca.crt"), "--cluster-signing-key-file=" + n.dirs.pki("ca.key"),
		"--use-service-account-credentials=true",
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=10257",
		"--profiling=false", "--v=1",
	}}
}

func (n *Node) scheduler() daemon {
	kc := n.dirs.pki(schedulerID.file + ".kubeconfig")
	return daemon{name: "kube-scheduler", path: filepath.Join(n.st.Bin, "kube-scheduler"), args: []string{
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=10259",
		"--profiling=false", "--v=1",
	}}
}

func (n *Node) containerd() daemon {
	return daemon{name: "containerd", path: containerdPath, args: []string{"--config=" + n.dirs.conf("containerd.toml")}}
}

func (n *Node) kubelet() daemon {
	return daemon{name: "kubelet", path: filepath.Join(n.st.Bin, "kubelet"), args: []string{
		"--config=" + n.dirs.conf("kubelet.yaml"),
		"--kubeconfig=" + n.dirs.pki(kubeletID.file+".kubeconfig"),
		"--root-dir=" + filepath.Join(n.dirs.State, "kubelet"),
		"--cert-dir=" + filepath.Join(n.dirs.State, "kubelet-certs"),
		"--hostname-override=" + Name, "--node-ip=" + NodeIP.String(),
		"--v=1",
	}}
}

func (n *Node) kubeProxy() daemon {
	return daemon{name: "kube-proxy", path: filepath.Join(n.st.Bin, "kube-proxy"), args: []string{
		"--config=" + n.dirs.conf("kube-proxy.yaml"), "--v=1",
	}}
}

// daemons lists them in start order.
func (n *Node) daemons() []daemon {
	return []daemon{n.etcd(), n.apiserver(), n.controllerManager(), n.scheduler(), n.containerd(), n.kubelet(), n.kubeProxy()}
}

// containerdPath is Debian's containerd; runc and the shim come with it.
const containerdPath = "/usr/bin/containerd"

// containerdConfig is containerd's configuration: its own root, state and
// socket, the CRI plugin with the cgroupfs driver (no systemd here), the
// locally built sandbox image, and CNI from the node's directories.
func (n *Node) containerdConfig() string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	var b strings.Builder
	fmt.Fprintf(&b, "version = 2\nroot = %s\nstate = %s\n", q(filepath.Join(n.dirs.State, "containerd")), q(filepath.Join(n.dirs.Run, "containerd", "state")))
	// Snapshotters and tracing this node does not use: fewer warnings.
	b.WriteString(`disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]` + "\n\n")
	fmt.Fprintf(&b, "[grpc]\n  address = %s\n\n", q(n.dirs.ContainerdSocket()))
	fmt.Fprintf(&b, "[ttrpc]\n  address = %s\n\n", q(n.dirs.ContainerdSocket()+".ttrpc"))
	fmt.Fprintf(&b, "[plugins.\"io.containerd.internal.v1.opt\"]\n  path = %s\n\n", q(filepath.Join(n.dirs.State, "containerd-opt")))
	b.WriteString("[plugins.\"io.containerd.grpc.v1.cri\"]\n")
	fmt.Fprintf(&b, "  sandbox_image = %s\n", q(n.st.PauseImage))
	// Root here lacks CAP_SYS_RESOURCE: a negative oom_score_adj is refused
	// and runc fails every sandbox unless containerd keeps it.
	b.WriteString("  restrict_oom_score_adj = true\n")
	// Pod network namespaces under the state directory, so that Down finds
	// every one of them.
	b.WriteString("  netns_mounts_under_state_dir = true\n")
	b.WriteString("  [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n    snapshotter = \"overlayfs\"\n    default_runtime_name = \"runc\"\n")
	b.WriteString("    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n      runtime_type = \"io.containerd.runc.v2\"\n")
	b.WriteString("      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n        SystemdCgroup = false\n")
	fmt.Fprintf(&b, "  [plugins.\"io.containerd.grpc.v1.cri\".cni]\n    bin_dir = %s\n    conf_dir = %s\n    max_conf_num = 1\n",
		q(n.dirs.cniBin()), q(n.dirs.cniConf()))
	return b.String()
}

// kubeletConfig is the KubeletConfiguration. AllowedUnsafeSysctls is
// sllbrd's list unless the node was set up to refuse them.
func (n *Node) kubeletConfig() map[string]any {
	p := n.dirs.pki
	cfg := map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1",
		"kind":       "KubeletConfiguration",
		// cgroup v1 (hybrid) without systemd as init: the cgroupfs driver,
		// and Kubernetes 1.31+ refuses cgroup v1 unless told not to.
		"cgroupDriver": "cgroupfs",
		"failCgroupV1": false,
		"cgroupRoot":   cgroupParent,
		"failSwapOn":   false,
		// containerd of this node.
		"containerRuntimeEndpoint": "unix://" + n.dirs.ContainerdSocket(),
		"podLogsDir":               filepath.Join(n.dirs.State, "pod-logs"),
		"address":                  NodeIP.String(),
		"port":                     kubeletPort,
		"readOnlyPort":             0,
		"healthzBindAddress":       "127.0.0.1",
		"healthzPort":              10248,
		"tlsCertFile":              p("kubelet-serving.crt"),
		"tlsPrivateKeyFile":        p("kubelet-serving.key"),
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
			"x509":      map[string]any{"clientCAFile": p("ca.crt")},
		},
		"authorization": map[string]any{"mode": "Webhook"},
		// A shared test machine's disk may be nearly full: evict only at the
		// very end, and never collect the node's own images.
		"evictionHard": map[string]string{
			"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%",
		},
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		"allowedUnsafeSysctls":        n.st.AllowedUnsafeSysctls,
		"resolvConf":                  "/etc/resolv.conf",
		"serializeImagePulls":         false,
	}
	return cfg
}

// kubeProxyConfig is the KubeProxyConfiguration: the nftables proxier
// (tables "kube-proxy" of families ip and ip6, deleted by Down), no
// conntrack tuning (root here may not raise nf_conntrack_max), services on
// the node's address only.
func (n *Node) kubeProxyConfig() map[string]any {
	return map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"mode":               "nftables",
		"clientConnection":   map[string]any{"kubeconfig": n.dirs.pki(proxyID.file + ".kubeconfig")},
		"hostnameOverride":   Name,
		"clusterCIDR":        PodNetwork.Subnets[0].String(),
		"bindAddress":        NodeIP.String(),
		"healthzBindAddress": "127.0.0.1:10256",
		"metricsBindAddress": "127.0.0.1:10249",
		"nodePortAddresses":  []string{NodeIP.String() + "/32"},
		"conntrack": map[string]any{
			"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s",
		},
	}
}

// SLLBRSysctls are the unsafe sysctls of the SLLBR pod template
// (deploy/sllbrd/deployment.yaml, docs/deploy.md "Sysctls"): a kubelet
// must allow them.
var SLLBRSysctls = []string{
	"net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding",
	"net.ipv4.fib_multipath_hash_policy", "net.ipv6.fib_multipath_hash_policy",
	"net.ipv4.conf.all.rp_filter", "net.ipv4.conf.default.rp_filter",
	"net.ipv4.fwmark_reflect", "net.ipv6.fwmark_reflect",
}
