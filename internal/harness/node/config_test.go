package node

import (
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current configuration")

// goldenNode is a node in fixed directories with fixed binaries.
func goldenNode() *Node {
	return &Node{
		dirs: Dirs{State: "/var/lib/sllbrd-node", Run: "/run/sllbrd-node"},
		st:   state{Bin: "/opt/kube/bin", PauseImage: "localhost/sllbrd-pause:v1", AllowedUnsafeSysctls: SLLBRSysctls},
		log:  discard{},
	}
}

// TestConfigGolden pins every configuration file the node writes and the
// daemons' command lines (go test -run TestConfigGolden -update rewrites
// them).
func TestConfigGolden(t *testing.T) {
	n := goldenNode()
	nad, err := n.nad(GatewayNetwork)
	if err != nil {
		t.Fatal(err)
	}
	toYAML := func(v any) string {
		b, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	conf, err := n.multinetConfig()
	if err != nil {
		t.Fatal(err)
	}
	var cmds strings.Builder
	for _, dm := range n.daemons() {
		cmds.WriteString(dm.name + ": " + dm.path + " " + strings.Join(dm.args, " ") + "\n")
	}
	for name, got := range map[string]string{
		"containerd.toml":   n.containerdConfig(),
		"kubelet.yaml":      toYAML(n.kubeletConfig()),
		"kube-proxy.yaml":   toYAML(n.kubeProxyConfig()),
		"multinet.conf":     string(conf),
		"nad-vlan-100.yaml": toYAML(nad.Object),
		"daemons.txt":       cmds.String(),
	} {
		path := filepath.Join("testdata", name+".golden")
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -run TestConfigGolden -update writes it)", err)
		}
		if got != string(want) {
			t.Errorf("%s differs from %s (-update rewrites it):\n%s", name, path, got)
		}
	}
}

func TestRefusedSysctlsLeaveNoneAllowed(t *testing.T) {
	n := goldenNode()
	n.st.AllowedUnsafeSysctls = []string{}
	b, err := yaml.Marshal(n.kubeletConfig())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "allowedUnsafeSysctls: []\n") {
		t.Errorf("a node refusing the sysctls writes %s", b)
	}
}

func TestDirsValidate(t *testing.T) {
	for _, d := range []Dirs{
		{State: "relative/dir", Run: "/run/sllbrd-node"},
		{State: "/", Run: "/run/sllbrd-node"},
		{State: "/var", Run: "/run/sllbrd-node"},
		{State: "/var/lib/x", Run: "/run/" + strings.Repeat("r", 90)},
	} {
		if err := d.validate(); err == nil {
			t.Errorf("%+v: no error", d)
		}
	}
	if err := (Dirs{State: "/var/lib/sllbrd-node", Run: "/run/sllbrd-node"}).validate(); err != nil {
		t.Errorf("default directories: %v", err)
	}
}

func TestPodAddresses(t *testing.T) {
	v4 := GatewayNetwork.PodAddresses(false)
	v6 := GatewayNetwork.PodAddresses(true)
	if len(v4) != 8 || v4[0] != netip.MustParseAddr("169.254.100.2") || v4[7] != netip.MustParseAddr("169.254.100.9") {
		t.Errorf("IPv4 pod addresses %v", v4)
	}
	if len(v6) != 8 || v6[0] != netip.MustParseAddr("fd00:169::2") || v6[7] != netip.MustParseAddr("fd00:169::9") {
		t.Errorf("IPv6 pod addresses %v", v6)
	}
	for _, nw := range Networks() {
		for i, r := range nw.PodRanges {
			s := nw.Subnets[i]
			if !s.Contains(r[0]) || !s.Contains(r[1]) || r[0].Compare(r[1]) > 0 || r[0] == s.Addr() {
				t.Errorf("%s: range %v of %v", nw.Bridge, r, s)
			}
		}
		if len(nw.Bridge) > 15 || (nw.NAD == "") != (nw.Bridge == PodNetwork.Bridge) {
			t.Errorf("network %+v", nw)
		}
	}
	if !PodNetwork.Subnets[0].Contains(NodeIP) || !ServiceCIDR.Contains(KubernetesServiceIP) || ServiceCIDR.Overlaps(PodNetwork.Subnets[0]) {
		t.Errorf("addresses: node %v pods %v services %v", NodeIP, PodNetwork.Subnets, ServiceCIDR)
	}
}

func TestSLLBRSysctlsMatchTheTemplate(t *testing.T) {
	b, err := os.ReadFile("../../../deploy/sllbrd/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					SecurityContext struct {
						Sysctls []struct{ Name string } `json:"sysctls"`
					} `json:"securityContext"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var unsafe []string
	for _, s := range d.Spec.Template.Spec.SecurityContext.Sysctls {
		if s.Name != "net.ipv4.ip_local_port_range" { // the kubelet's safe set
			unsafe = append(unsafe, s.Name)
		}
	}
	if !slices.Equal(unsafe, SLLBRSysctls) {
		t.Errorf("the template's unsafe sysctls %v, the node allows %v", unsafe, SLLBRSysctls)
	}
}
