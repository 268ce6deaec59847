package multinet

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestIntegrationMultinet runs the real multinet binary with Debian's CNI
// plugins against a real kube-apiserver, as containerd would on the node:
// a pod with two NetworkAttachmentDefinitions (a bridge with host-local
// IPv4 and IPv6 addresses; a 0.4.0 list of a bridge with static addresses
// and tuning setting the MAC, in another namespace) gets its interfaces,
// addresses and network-status; CHECK passes; DEL removes the interfaces
// and releases the leases, also after the pod and its networks are
// deleted; another pod's UID is refused; a broken network rolls back
// everything.
func TestIntegrationMultinet(t *testing.T) {
	n := newTestNode(t)
	n.createNAD("mn-apps", "net-a", `{"cniVersion":"1.0.0","type":"bridge","bridge":"mnb1","ipam":`+
		n.hostLocal("203.0.113.0/24", "203.0.113.10", "2001:db8:a::/64", "2001:db8:a::10")+`}`)
	n.createNAD("mn-infra", "net-b", `{"cniVersion":"0.4.0","name":"net-b-list","plugins":[
		{"type":"bridge","bridge":"mnb2","ipam":{"type":"static","addresses":[{"address":"198.51.100.7/24"},{"address":"2001:db8:b::7/64"}]}},
		{"type":"tuning","mac":"02:6d:6e:00:0b:07"}]}`)
	n.createNAD("mn-apps", "broken", `{"cniVersion":"1.0.0","type":"bridge","bridge":"mnb1",
		"ipam":{"type":"static","addresses":[{"address":"198.51.100.8"}]}}`)
	podA := n.createPod("mn-apps", "pod-a", `[{"name":"net-a"},{"name":"net-b","namespace":"mn-infra","interface":"ext0"}]`)

	// nothingLeft fails the test if anything of sb is left: interfaces in
	// the pod or on the node, leases, cache entries.
	nothingLeft := func(t *testing.T, sb sandbox) {
		t.Helper()
		if l := n.links(sb.name); len(l) != 0 {
			t.Errorf("interfaces left in the pod: %v", l)
		}
		if v := n.nodeVeths(); len(v) != 0 {
			t.Errorf("veths left on the node: %v", v)
		}
		for _, network := range []string{"mn-pods", "net-a"} {
			if l := n.leases(network); len(l) != 0 {
				t.Errorf("host-local leases of %s left: %v", network, l)
			}
		}
		if c := n.cached(); len(c) != 0 {
			t.Errorf("cache entries left: %v", c)
		}
	}

	t.Run("refuses another pod's UID", func(t *testing.T) {
		sb := n.newSandbox(podA, "6d6e0000-0000-4000-8000-000000000000")
		code, msg := n.cni("ADD", sb).cniError(t)
		if code != CodeKubernetes || !strings.Contains(msg, string(podA.UID)) || !strings.Contains(msg, "refusing") {
			t.Errorf("ADD with another UID: code %d %q", code, msg)
		}
		nothingLeft(t, sb)
		// The network-status patch carries the UID: the API server refuses
		// it for another pod of the same name.
		if err := n.api.SetNetworkStatus(n.ctx, podA.Namespace, podA.Name, "6d6e0000-0000-4000-8000-000000000000", "[]"); err == nil {
			t.Error("the API server took a network-status patch with another UID")
		}
		if s := n.status(podA); s != "" {
			t.Errorf("network-status written: %s", s)
		}
	})

	t.Run("adds, checks and deletes", func(t *testing.T) {
		sb := n.newSandbox(podA, string(podA.UID))
		out := n.mustCNI("ADD", sb)
		res, err := ParseResult(out, CNIVersion)
		if err != nil {
			t.Fatalf("ADD's result %s: %v", out, err)
		}
		var ips []string
		for _, ip := range res.IPs {
			ips = append(ips, ip.Address)
		}
		if i := len(res.Interfaces) - 1; i < 0 || res.Interfaces[i].Name != "eth0" || res.Interfaces[i].Sandbox != sb.netns ||
			!reflect.DeepEqual(ips, []string{"10.244.0.10/24", "fd00:244::10/64"}) {
			t.Errorf("ADD returned %s, want the default network's result", out)
		}
		links := n.links(sb.name)
		want := map[string][]string{
			"eth0": {"10.244.0.10/24", "fd00:244::10/64"},
			"net1": {"2001:db8:a::10/64", "203.0.113.10/24"},
			"ext0": {"198.51.100.7/24", "2001:db8:b::7/64"},
		}
		if len(links) != len(want) {
			t.Errorf("pod interfaces %v, want %v", links, want)
		}
		for name, addrs := range want {
			if !reflect.DeepEqual(links[name].addrs, addrs) {
				t.Errorf("%s has %v, want %v", name, links[name].addrs, addrs)
			}
		}
		if links["ext0"].mac != "02:6d:6e:00:0b:07" {
			t.Errorf("ext0 has MAC %s, want tuning's", links["ext0"].mac)
		}
		wantStatus := fmt.Sprintf(`[{
    "name": "mn-pods",
    "interface": "eth0",
    "ips": [
        "10.244.0.10",
        "fd00:244::10"
    ],
    "mac": %q,
    "default": true,
    "dns": {}
},{
    "name": "mn-apps/net-a",
    "interface": "net1",
    "ips": [
        "203.0.113.10",
        "2001:db8:a::10"
    ],
    "mac": %q,
    "dns": {}
},{
    "name": "mn-infra/net-b",
    "interface": "ext0",
    "ips": [
        "198.51.100.7",
        "2001:db8:b::7"
    ],
    "mac": "02:6d:6e:00:0b:07",
    "dns": {}
}]`, links["eth0"].mac, links["net1"].mac)
		if got := n.status(podA); got != wantStatus {
			t.Errorf("network-status\n%s\nwant\n%s", got, wantStatus)
		}
		if l := n.leases("mn-pods"); !reflect.DeepEqual(l, []string{"10.244.0.10", "fd00:244::10"}) {
			t.Errorf("leases of mn-pods %v", l)
		}
		if l := n.leases("net-a"); !reflect.DeepEqual(l, []string{"2001:db8:a::10", "203.0.113.10"}) {
			t.Errorf("leases of net-a %v", l)
		}
		if c := n.cached(); !reflect.DeepEqual(c, []string{sb.container + "-eth0.json"}) {
			t.Errorf("cache %v", c)
		}

		n.mustCNI("CHECK", sb)
		n.mustCNI("DEL", sb)
		nothingLeft(t, sb)

		log, err := os.ReadFile(filepath.Join(n.dir, "log", "multinet.log"))
		if err != nil {
			t.Fatal(err)
		}
		for _, command := range []string{"ADD", "CHECK", "DEL"} {
			prefix := fmt.Sprintf("%s pod=mn-apps/pod-a container=%s ifname=eth0: ", command, sb.container)
			if !strings.Contains(string(log), prefix+"done") {
				t.Errorf("log has no line %q:\n%s", prefix+"done", log)
			}
		}
	})

	t.Run("rolls back when a network fails", func(t *testing.T) {
		podB := n.createPod("mn-apps", "pod-b", "net-a, broken")
		sb := n.newSandbox(podB, string(podB.UID))
		code, msg := n.cni("ADD", sb).cniError(t)
		if code != CodeDelegateFailed || !strings.Contains(msg, "network mn-apps/broken on net2") || !strings.Contains(msg, "198.51.100.8") {
			t.Errorf("ADD with a broken network: code %d %q", code, msg)
		}
		nothingLeft(t, sb)
		if s := n.status(podB); s != "" {
			t.Errorf("network-status written: %s", s)
		}
	})

	t.Run("deletes after the pod and its networks are gone", func(t *testing.T) {
		sb := n.newSandbox(podA, string(podA.UID))
		n.mustCNI("ADD", sb)
		if l := n.links(sb.name); len(l) != 3 {
			t.Fatalf("pod interfaces after ADD: %v", l)
		}
		zero := int64(0)
		if err := n.admin.CoreV1().Pods(podA.Namespace).Delete(n.ctx, podA.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		for _, nad := range []struct{ ns, name string }{{"mn-apps", "net-a"}, {"mn-infra", "net-b"}} {
			if err := n.objects.Dynamic.Resource(nadResource).Namespace(nad.ns).Delete(n.ctx, nad.name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		n.mustCNI("DEL", sb)
		nothingLeft(t, sb)
		n.mustCNI("DEL", sb) // idempotent: without a cache entry, the default network only
		nothingLeft(t, sb)
	})
}
