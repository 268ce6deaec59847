package multinet

import (
	"encoding/json"
	"strings"
	"testing"
)

// Results as Debian's bridge plugin prints them (the host's bridge and
// veth end, then the pod's interface), in the two versions multinet reads.
const (
	bridgeResult040 = `{"cniVersion":"0.4.0","interfaces":[{"name":"br1","mac":"aa:00:00:00:00:01"},
		{"name":"veth1","mac":"aa:00:00:00:00:02"},{"name":"net1","mac":"02:00:00:00:00:07","sandbox":"/run/netns/p"}],
		"ips":[{"version":"4","interface":2,"address":"192.0.2.7/24","gateway":"192.0.2.1"},
		{"version":"6","interface":2,"address":"2001:db8::7/64"}],
		"routes":[{"dst":"0.0.0.0/0"}],"dns":{"nameservers":["192.0.2.53"],"search":["example.org"]}}`
	bridgeResult100 = `{"cniVersion":"1.0.0","interfaces":[{"name":"br1","mac":"aa:00:00:00:00:01"},
		{"name":"veth1","mac":"aa:00:00:00:00:02"},{"name":"net1","mac":"02:00:00:00:00:07","sandbox":"/run/netns/p"}],
		"ips":[{"interface":2,"address":"192.0.2.7/24","gateway":"192.0.2.1"},{"interface":2,"address":"2001:db8::7/64"}],
		"routes":[{"dst":"0.0.0.0/0"}],"dns":{"nameservers":["192.0.2.53"],"search":["example.org"]}}`
)

func TestParseResult(t *testing.T) {
	for version, data := range map[string]string{"0.4.0": bridgeResult040, "1.0.0": bridgeResult100} {
		r, err := ParseResult([]byte(data), version)
		if err != nil {
			t.Fatalf("%s: %v", version, err)
		}
		if r.CNIVersion != version || len(r.Interfaces) != 3 || r.Interfaces[2].Sandbox != "/run/netns/p" ||
			len(r.IPs) != 2 || r.IPs[1].Address != "2001:db8::7/64" || *r.IPs[0].Interface != 2 ||
			r.IPs[0].Gateway != "192.0.2.1" || r.DNS.Search[0] != "example.org" {
			t.Errorf("%s: %+v", version, r)
		}
	}
	// An IPAM plugin's result has no interfaces and may omit the version.
	r, err := ParseResult([]byte(`{"ips":[{"address":"10.0.0.2/24"}]}`), "1.0.0")
	if err != nil || r.CNIVersion != "1.0.0" || r.IPs[0].Interface != nil {
		t.Errorf("IPAM result: %+v, %v", r, err)
	}
}

func TestParseResultRejects(t *testing.T) {
	for _, tc := range []struct{ data, version, want string }{
		{"", "1.0.0", "empty result"},
		{"[]", "1.0.0", "not a CNI result"},
		{`{"cniVersion":"0.4.0"}`, "1.0.0", `cniVersion "0.4.0", its configuration "1.0.0"`},
		{`{"ips":[{"address":"10.0.0.2"}]}`, "1.0.0", "ips[0]"},
		{`{"ips":[{"address":"10.0.0.2/24","interface":0}]}`, "1.0.0", "names interface 0 of 0"},
		{`{"interfaces":[{"name":"a"}],"ips":[{"address":"10.0.0.2/24","interface":-1}]}`, "1.0.0", "names interface -1"},
	} {
		if _, err := ParseResult([]byte(tc.data), tc.version); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseResult(%s): error %v, want one saying %q", tc.data, err, tc.want)
		}
	}
}

func TestConvertResult(t *testing.T) {
	same, err := ConvertResult([]byte(bridgeResult100), "1.0.0")
	if err != nil || string(same) != bridgeResult100 {
		t.Errorf("1.0.0 to 1.0.0 changed the result: %s (%v)", same, err)
	}
	out, err := ConvertResult([]byte(bridgeResult040), "0.4.0")
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(bridgeResult100), &want); err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("0.4.0 converted:\n%s\nwant\n%s", gotJSON, wantJSON)
	}
	if _, err := ConvertResult([]byte(bridgeResult040), "0.3.1"); err == nil {
		t.Error("converted a 0.3.1 result")
	}
	if _, err := ConvertResult([]byte(`{"ips":{}}`), "0.4.0"); err == nil {
		t.Error("converted a result whose ips are not a list")
	}
}
