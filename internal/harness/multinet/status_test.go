package multinet

import (
	"testing"
)

func TestStatusOf(t *testing.T) {
	r, err := ParseResult([]byte(bridgeResult040), "0.4.0")
	if err != nil {
		t.Fatal(err)
	}
	st := statusOf("infra/net-b", "net1", false, r)
	want := `[{
    "name": "infra/net-b",
    "interface": "net1",
    "ips": [
        "192.0.2.7",
        "2001:db8::7"
    ],
    "mac": "02:00:00:00:00:07",
    "dns": {
        "nameservers": [
            "192.0.2.53"
        ],
        "search": [
            "example.org"
        ]
    }
},{
    "name": "pods",
    "interface": "eth0",
    "ips": [
        "10.0.0.2"
    ],
    "mac": "02:00:00:00:00:01",
    "default": true,
    "dns": {}
}]`
	def := statusOf("pods", "eth0", true, Result{
		Interfaces: []ResultInterface{{Name: "eth0", Mac: "02:00:00:00:00:01", Sandbox: "/run/netns/p"}},
		IPs:        []ResultIP{{Address: "10.0.0.2/24"}},
	})
	got, err := RenderNetworkStatus([]NetworkStatus{st, def})
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("network-status\n%s\nwant\n%s", got, want)
	}
}

func TestStatusOfPicksThePodInterface(t *testing.T) {
	zero, two := 0, 2
	r := Result{
		Interfaces: []ResultInterface{
			{Name: "net1", Mac: "02:00:00:00:00:01", Sandbox: "/run/netns/p"},
			{Name: "host0", Mac: "aa:00:00:00:00:01"},
			{Name: "other", Mac: "02:00:00:00:00:03", Sandbox: "/run/netns/p"},
		},
		IPs: []ResultIP{{Address: "192.0.2.1/24", Interface: &zero}, {Address: "192.0.2.3/24", Interface: &two}},
	}
	if st := statusOf("n", "net1", false, r); st.Interface != "net1" || st.Mac != "02:00:00:00:00:01" || len(st.IPs) != 1 || st.IPs[0] != "192.0.2.1" {
		t.Errorf("interface named ifname: %+v", st)
	}
	// Without one named ifname, the last in the pod, as Multus takes it.
	if st := statusOf("n", "eth9", false, r); st.Interface != "other" || len(st.IPs) != 1 || st.IPs[0] != "192.0.2.3" {
		t.Errorf("no interface named ifname: %+v", st)
	}
	if st := statusOf("n", "eth9", false, Result{}); st.Interface != "" || st.IPs != nil {
		t.Errorf("empty result: %+v", st)
	}
}
