package node

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// The node's name and its fixed addresses. They are documented in
// docs/node.md ("A node to try it on") and must change with it.
const (
	// Name is the Node object's name (the kubelet's --hostname-override).
	Name = "sllbrd-node"
	// APIServerPort is kube-apiserver's port on NodeIP.
	APIServerPort = 6443
	// etcdClientPort and etcdPeerPort are etcd's ports on 127.0.0.1, away
	// from etcd's defaults so that another etcd on the host does not clash.
	etcdClientPort = 23790
	etcdPeerPort   = 23800
	kubeletPort    = 10250
	// Namespace is where Up puts the NetworkAttachmentDefinitions of the
	// secondary networks: the namespace deploy/ installs into.
	Namespace = "default"
)

// Network is one host Linux bridge of the node.
type Network struct {
	// Bridge is the Linux bridge in the host's network namespace.
	Bridge string
	// NAD is the NetworkAttachmentDefinition that attaches pods to it
	// (empty: the pods' default network).
	NAD string
	// Subnets are the network's IPv4 and IPv6 subnets.
	Subnets []netip.Prefix
	// PodRanges are the first and last address the pods get from each
	// subnet (host-local IPAM, which keeps the subnet's first address as a
	// gateway); the rest of the subnet is free for namespaces attached by
	// hand (a DC gateway, a client).
	PodRanges [][2]netip.Addr
	// What the network is for, one line.
	What string
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func mustAddr(s string) netip.Addr     { return netip.MustParseAddr(s) }

// The node's networks. NodeIP is the host's address on the pod network:
// kube-apiserver, the kubelet and kube-proxy's services live there.
var (
	NodeIP      = mustAddr("10.244.0.1")
	ServiceCIDR = mustPrefix("10.96.0.0/16")
	// KubernetesServiceIP is the ClusterIP of the kubernetes Service, the
	// first address of ServiceCIDR.
	KubernetesServiceIP = mustAddr("10.96.0.1")

	PodNetwork = Network{
		Bridge:    "sllbrd-pods",
		Subnets:   []netip.Prefix{mustPrefix("10.244.0.0/24")},
		PodRanges: [][2]netip.Addr{{mustAddr("10.244.0.10"), mustAddr("10.244.0.250")}},
		What:      "the pods' default network (eth0): the API server and the kubelet at 10.244.0.1",
	}
	// GatewayNetwork is the seed's vlan-100: the SLLBR pods and the DC
	// gateways (the seed's GatewayRouters name 169.254.100.150 and
	// fd00:169::150).
	GatewayNetwork = Network{
		Bridge:    "sllbrd-gw",
		NAD:       "vlan-100",
		Subnets:   []netip.Prefix{mustPrefix("169.254.100.0/24"), mustPrefix("fd00:169::/64")},
		PodRanges: [][2]netip.Addr{{mustAddr("169.254.100.2"), mustAddr("169.254.100.9")}, {mustAddr("fd00:169::2"), mustAddr("fd00:169::9")}},
		What:      "towards the DC gateways (the seed's vlan-100); attach a gateway at .150/::150",
	}
	// TargetNetwork is the seed's macvlan-nad-1: the SLLBR pods and the
	// application pods (the Gateway's network-subnets).
	TargetNetwork = Network{
		Bridge:    "sllbrd-tg",
		NAD:       "macvlan-nad-1",
		Subnets:   []netip.Prefix{mustPrefix("169.111.100.0/24"), mustPrefix("fd00:111::/64")},
		PodRanges: [][2]netip.Addr{{mustAddr("169.111.100.2"), mustAddr("169.111.100.99")}, {mustAddr("fd00:111::2"), mustAddr("fd00:111::99")}},
		What:      "towards the application pods (the seed's macvlan-nad-1)",
	}
)

// Networks lists the node's networks, the default one first.
func Networks() []Network { return []Network{PodNetwork, GatewayNetwork, TargetNetwork} }

// PodAddresses lists every address the pods may get on n in one family:
// a DC gateway that must know its BGP neighbours in advance peers with all.
func (n Network) PodAddresses(is6 bool) []netip.Addr {
	var out []netip.Addr
	for _, r := range n.PodRanges {
		if r[0].Is6() != is6 {
			continue
		}
		for a := r[0]; a.Compare(r[1]) <= 0; a = a.Next() {
			out = append(out, a)
		}
	}
	return out
}

// Dirs are where the node keeps its files.
type Dirs struct {
	// State holds everything that lasts: keys, configurations, etcd, the
	// kubelet's and containerd's roots, logs, PID files.
	State string
	// Run holds sockets and containerd's state (short paths: a socket's
	// path has at most 107 bytes).
	Run string
}

// Default directories, overridden by SLLBRD_NODE_DIR and SLLBRD_NODE_RUN.
const (
	defaultStateDir = "/var/lib/sllbrd-node"
	defaultRunDir   = "/run/sllbrd-node"
	envStateDir     = "SLLBRD_NODE_DIR"
	envRunDir       = "SLLBRD_NODE_RUN"
)

// DefaultDirs returns the directories of the node of this host.
func DefaultDirs() (Dirs, error) {
	d := Dirs{State: defaultStateDir, Run: defaultRunDir}
	if v := os.Getenv(envStateDir); v != "" {
		d.State = v
	}
	if v := os.Getenv(envRunDir); v != "" {
		d.Run = v
	}
	return d, d.validate()
}

func (d Dirs) validate() error {
	var errs []error
	for _, p := range []struct{ name, path string }{{envStateDir, d.State}, {envRunDir, d.Run}} {
		clean := filepath.Clean(p.path)
		switch {
		case !filepath.IsAbs(p.path):
			errs = append(errs, fmt.Errorf("%s %q: want an absolute path", p.name, p.path))
		case clean == "/" || strings.Count(clean, "/") < 2:
			// Down removes the directory: never a top-level one.
			errs = append(errs, fmt.Errorf("%s %q: want a directory at least two levels below /", p.name, p.path))
		}
	}
	if len(filepath.Join(d.Run, "containerd", "containerd.sock")) > 100 {
		errs = append(errs, fmt.Errorf("%s %q: too long for a socket path", envRunDir, d.Run))
	}
	return errors.Join(errs...)
}

// Paths of the node's files.
func (d Dirs) pki(name string) string     { return filepath.Join(d.State, "pki", name) }
func (d Dirs) log(name string) string     { return filepath.Join(d.State, "logs", name+".log") }
func (d Dirs) pidFile(name string) string { return filepath.Join(d.State, "pids", name+".pid") }
func (d Dirs) conf(name string) string    { return filepath.Join(d.State, "conf", name) }

// ContainerdSocket is the node's CRI endpoint (a path).
func (d Dirs) ContainerdSocket() string { return filepath.Join(d.Run, "containerd", "containerd.sock") }

// NetNSDir is where containerd bind-mounts the pods' network namespaces
// (netns_mounts_under_state_dir): the paths CRI reports. Run is a shared
// mount, so a container mounting it with HostToContainer propagation sees
// the namespaces of pods started after it.
func (d Dirs) NetNSDir() string {
	return filepath.Join(d.Run, "containerd", "state", "io.containerd.grpc.v1.cri", "netns")
}

// Kubeconfig is the administrator's kubeconfig (system:masters).
func (d Dirs) Kubeconfig() string { return filepath.Join(d.State, "admin.kubeconfig") }

// stateFile records what Up built; Open reads it.
func (d Dirs) stateFile() string { return filepath.Join(d.State, "node.json") }

// cniBin, cniConf: containerd's CNI directories; the plugins are links to
// Debian's (/usr/lib/cni) beside multinet.
func (d Dirs) cniBin() string  { return filepath.Join(d.State, "cni", "bin") }
func (d Dirs) cniConf() string { return filepath.Join(d.State, "cni", "net.d") }

// ipamDir is host-local's lease directory.
func (d Dirs) ipamDir() string { return filepath.Join(d.State, "cni", "ipam") }

// cgroupParent is the cgroup (under every v1 hierarchy) the kubelet puts
// the pods in: Down kills what is left in it.
const cgroupParent = "/sllbrd-node"

// CNIPluginsDir is where Debian's containernetworking-plugins install.
const CNIPluginsDir = "/usr/lib/cni"

// cniPlugins are the Debian plugins the node offers to NADs.
var cniPlugins = []string{"bridge", "host-local", "macvlan", "vlan", "static", "tuning", "sbr", "loopback", "portmap"}
