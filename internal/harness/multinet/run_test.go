package multinet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// harness runs Main with fake plugins and a fake API: pod apps/p1 asks for
// apps/net-a (a list: fakebr, then fakemac setting the MAC) on net1 and
// infra/net-b (a 0.4.0 conf) on ext0; the default network "pods" is fakebr.
type harness struct {
	t     *testing.T
	fakes *fakes
	api   *fakeAPI
	conf  Config
	args  string
}

const (
	testNetns     = "/run/netns/multinet-unit"
	testContainer = "c0ffee"
)

func newHarness(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, fakes: newFakes(t, "fakebr", "fakemac"), api: newFakeAPI(),
		args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=apps;K8S_POD_NAME=p1;K8S_POD_INFRA_CONTAINER_ID=c0ffee;K8S_POD_UID=uid-1"}
	h.conf = Config{CNIVersion: CNIVersion, Name: "multinet", Type: TypeName, Kubeconfig: "/etc/multinet/kubeconfig",
		CacheDir: filepath.Join(dir, "cache"), LogFile: filepath.Join(dir, "log", "multinet.log"),
		DefaultNetwork: json.RawMessage(`{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"fakebr","ip":"10.0.0.2/24"}]}`)}
	h.api.pods["apps/p1"] = Pod{UID: "uid-1", Annotations: map[string]string{NetworksAnnotation: "net-a, infra/net-b@ext0"}}
	h.api.nads["apps/net-a"] = `{"cniVersion":"1.0.0","plugins":[{"type":"fakebr","ip":"192.0.2.2/24"},{"type":"fakemac","mac":"02:00:00:00:0a:01"}]}`
	h.api.nads["infra/net-b"] = `{"cniVersion":"0.4.0","name":"b-net","type":"fakebr","ip":"2001:db8::2/64"}`
	return h
}

// run runs command through Main and returns its exit status and stdout.
func (h *harness) run(command string, extraEnv ...string) (int, []byte) {
	h.t.Helper()
	conf, err := h.conf.Marshal()
	if err != nil {
		h.t.Fatal(err)
	}
	env := append(h.fakes.env(), "CNI_COMMAND="+command, "CNI_CONTAINERID="+testContainer, "CNI_NETNS="+testNetns,
		"CNI_IFNAME=eth0", "CNI_ARGS="+h.args, "CNI_PATH=/nonexistent:"+h.fakes.path)
	var stdout bytes.Buffer
	code := Main(context.Background(), append(env, extraEnv...), bytes.NewReader(conf), &stdout, h.api.dial)
	return code, stdout.Bytes()
}

// mustRun runs command and fails the test unless it succeeds.
func (h *harness) mustRun(command string, extraEnv ...string) []byte {
	h.t.Helper()
	code, out := h.run(command, extraEnv...)
	if code != 0 {
		h.t.Fatalf("%s: exit %d: %s", command, code, out)
	}
	return out
}

// mustFail runs command, wants it to fail with a CNI error of code, and
// returns the error's message.
func (h *harness) mustFail(command string, code uint) string {
	h.t.Helper()
	exit, out := h.run(command)
	var e struct {
		CNIVersion string `json:"cniVersion"`
		Code       uint   `json:"code"`
		Msg        string `json:"msg"`
	}
	if err := json.Unmarshal(out, &e); err != nil || exit == 0 {
		h.t.Fatalf("%s: exit %d, stdout %q: want a CNI error (%v)", command, exit, out, err)
	}
	if e.Code != code || e.CNIVersion != CNIVersion || e.Msg == "" {
		h.t.Fatalf("%s: error %+v, want code %d", command, e, code)
	}
	return e.Msg
}

// steps summarises the fake plugins' calls as "COMMAND type ifname network
// prev|-", checking that each got the runtime's container, netns, args and
// path.
func (h *harness) steps() []string {
	h.t.Helper()
	var out []string
	for _, c := range h.fakes.calls(h.t) {
		if c.ContainerID != testContainer || c.Netns != testNetns || c.Args != h.args || c.Path != "/nonexistent:"+h.fakes.path {
			h.t.Errorf("%s %s on %s got container %q netns %q args %q path %q, not the runtime's",
				c.Command, c.Type, c.IfName, c.ContainerID, c.Netns, c.Args, c.Path)
		}
		prev := "-"
		if c.PrevResult != nil && string(c.PrevResult) != "null" {
			prev = "prev"
		}
		out = append(out, strings.Join([]string{c.Command, c.Type, c.IfName, c.Name + "@" + c.CNIVersion, prev}, " "))
	}
	return out
}

func (h *harness) wantSteps(what string, want ...string) {
	h.t.Helper()
	if got := h.steps(); !reflect.DeepEqual(got, want) {
		h.t.Errorf("%s: plugin calls\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func (h *harness) cacheFiles() []string {
	h.t.Helper()
	return dirNames(h.t, h.conf.CacheDir)
}

// dirNames returns the names in dir (none when dir does not exist).
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

var (
	addAll = []string{
		"ADD fakebr eth0 pods@1.0.0 -",
		"ADD fakebr net1 net-a@1.0.0 -",
		"ADD fakemac net1 net-a@1.0.0 prev",
		"ADD fakebr ext0 b-net@0.4.0 -",
	}
	delAll = []string{
		"DEL fakebr ext0 b-net@0.4.0 prev",
		"DEL fakemac net1 net-a@1.0.0 prev",
		"DEL fakebr net1 net-a@1.0.0 prev",
		"DEL fakebr eth0 pods@1.0.0 prev",
	}
)

func TestAddCheckDel(t *testing.T) {
	h := newHarness(t)
	out := h.mustRun("ADD")
	h.wantSteps("ADD", addAll...)
	res, err := ParseResult(out, CNIVersion)
	if err != nil || len(res.IPs) != 1 || res.IPs[0].Address != "10.0.0.2/24" || res.Interfaces[0].Name != "eth0" {
		t.Errorf("ADD returned %s (%v), want the default network's result", out, err)
	}
	var status []NetworkStatus
	if err := json.Unmarshal([]byte(h.api.statuses["apps/p1"]), &status); err != nil {
		t.Fatalf("network-status %q: %v", h.api.statuses["apps/p1"], err)
	}
	dns := DNS{Nameservers: []string{"192.0.2.53"}}
	want := []NetworkStatus{
		{Name: "pods", Interface: "eth0", IPs: []string{"10.0.0.2"}, Mac: "02:00:00:00:00:01", Default: true, DNS: dns},
		{Name: "apps/net-a", Interface: "net1", IPs: []string{"192.0.2.2"}, Mac: "02:00:00:00:0a:01", DNS: dns},
		{Name: "infra/net-b", Interface: "ext0", IPs: []string{"2001:db8::2"}, Mac: "02:00:00:00:00:01", DNS: dns},
	}
	if !reflect.DeepEqual(status, want) {
		t.Errorf("network-status %+v\nwant %+v", status, want)
	}
	if got := h.cacheFiles(); !reflect.DeepEqual(got, []string{testContainer + "-eth0.json"}) {
		t.Errorf("cache %v after ADD", got)
	}

	h.mustRun("CHECK")
	h.wantSteps("CHECK", "CHECK fakebr eth0 pods@1.0.0 prev", "CHECK fakebr net1 net-a@1.0.0 prev",
		"CHECK fakemac net1 net-a@1.0.0 prev", "CHECK fakebr ext0 b-net@0.4.0 prev")

	// DEL works from the cache alone: the API, the pod and its networks are gone.
	h.api = nil
	h.mustRun("DEL")
	h.wantSteps("DEL", delAll...)
	if live := h.fakes.live(t); len(live) != 0 || len(h.cacheFiles()) != 0 {
		t.Errorf("after DEL: attachments %v, cache %v", live, h.cacheFiles())
	}
	// Again, without a cache entry: the default network only.
	h.mustRun("DEL")
	h.wantSteps("second DEL", "DEL fakebr eth0 pods@1.0.0 -")
	msg := h.mustFail("CHECK", CodeUnknownContainer)
	if !strings.Contains(msg, "no ADD") {
		t.Errorf("CHECK after DEL: %q", msg)
	}

	logData, err := os.ReadFile(h.conf.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(logData)), "\n") {
		if !strings.Contains(line, "container="+testContainer) || !strings.Contains(line, "pod=apps/p1") {
			t.Errorf("log line %q does not name the pod and the container", line)
		}
	}
	if !strings.Contains(string(logData), "added network infra/net-b on ext0") {
		t.Errorf("log does not record the additions:\n%s", logData)
	}
}

func TestAddRollsBackWhenASecondaryFails(t *testing.T) {
	h := newHarness(t)
	h.api.nads["infra/net-b"] = `{"cniVersion":"0.4.0","name":"b-net","type":"fakebr","fail":"bridge br-b is gone"}`
	msg := h.mustFail("ADD", CodeDelegateFailed)
	for _, want := range []string{"network infra/net-b on ext0", "plugin fakebr failed", "bridge br-b is gone"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	h.wantSteps("failed ADD", append(addAll[:3:3],
		"ADD fakebr ext0 b-net@0.4.0 -",
		"DEL fakebr ext0 b-net@0.4.0 -", // the failed one is deleted too, without a result
		"DEL fakemac net1 net-a@1.0.0 prev", "DEL fakebr net1 net-a@1.0.0 prev", "DEL fakebr eth0 pods@1.0.0 prev")...)
	if live := h.fakes.live(t); len(live) != 0 || len(h.cacheFiles()) != 0 || len(h.api.statuses) != 0 {
		t.Errorf("after the rollback: attachments %v, cache %v, statuses %v", live, h.cacheFiles(), h.api.statuses)
	}
}

func TestAddRollsBackWhenTheStatusCannotBeWritten(t *testing.T) {
	h := newHarness(t)
	h.api.patchErr = errors.New("forbidden")
	msg := h.mustFail("ADD", CodeKubernetes)
	if !strings.Contains(msg, "forbidden") {
		t.Errorf("error %q", msg)
	}
	h.wantSteps("ADD", append(append([]string(nil), addAll...), delAll...)...)
	if live := h.fakes.live(t); len(live) != 0 || len(h.cacheFiles()) != 0 {
		t.Errorf("after the rollback: attachments %v, cache %v", live, h.cacheFiles())
	}
}

func TestFailedRollbackLeavesTheCacheForDel(t *testing.T) {
	h := newHarness(t)
	h.api.nads["infra/net-b"] = `{"cniVersion":"0.4.0","name":"b-net","type":"fakebr","fail":"no"}`
	code, out := h.run("ADD", fakeFailDelEnv+"=fakemac")
	if code == 0 || !strings.Contains(string(out), "DEL will retry") {
		t.Fatalf("ADD: exit %d %s", code, out)
	}
	h.steps()
	if len(h.cacheFiles()) != 1 {
		t.Fatalf("cache %v: the failed rollback's entry is gone", h.cacheFiles())
	}
	if live := h.fakes.live(t); !reflect.DeepEqual(live, []string{testContainer + "-net1-fakemac"}) {
		t.Errorf("the rollback stopped at the failure: attachments %v", live)
	}
	h.mustRun("DEL")
	h.wantSteps("DEL", "DEL fakebr ext0 b-net@0.4.0 -", "DEL fakemac net1 net-a@1.0.0 prev",
		"DEL fakebr net1 net-a@1.0.0 prev", "DEL fakebr eth0 pods@1.0.0 prev")
	if live := h.fakes.live(t); len(live) != 0 || len(h.cacheFiles()) != 0 {
		t.Errorf("after DEL: attachments %v, cache %v", live, h.cacheFiles())
	}
}

func TestAddRefusesAnotherPod(t *testing.T) {
	h := newHarness(t)
	h.api.pods["apps/p1"] = Pod{UID: "uid-2"}
	msg := h.mustFail("ADD", CodeKubernetes)
	if !strings.Contains(msg, "uid-2") || !strings.Contains(msg, "uid-1") {
		t.Errorf("error %q does not name both UIDs", msg)
	}
	h.wantSteps("refused ADD")
	if len(h.cacheFiles()) != 0 {
		t.Errorf("cache %v", h.cacheFiles())
	}
}

func TestAddValidatesEverythingBeforeAdding(t *testing.T) {
	for _, tc := range []struct {
		name, annotation string
		nad              string // of apps/net-a
		code             uint
		want             string
	}{
		{"unsupported key", `[{"name":"net-a","mac":"02:00:00:00:00:09"}]`, "", CodeInvalidAttachment, "mac not supported"},
		{"interface taken", `net-a@eth0`, "", CodeInvalidAttachment, "both want interface eth0"},
		{"interface twice", `net-a@net2, infra/net-b`, "", CodeInvalidAttachment, "both want interface net2"},
		{"no such network", `net-a, net-c`, "", CodeKubernetes, "network apps/net-c"},
		{"bad config", `net-a`, `{"cniVersion":"1.0.0","type":"../../bin/sh"}`, CodeInvalidAttachment, "plugin type"},
		{"recursion", `net-a`, `{"cniVersion":"1.0.0","type":"multinet"}`, CodeInvalidAttachment, "multinet itself"},
		{"old version", `net-a`, `{"cniVersion":"0.3.1","type":"fakebr"}`, CodeInvalidAttachment, `"0.3.1" is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.api.pods["apps/p1"].Annotations[NetworksAnnotation] = tc.annotation
			if tc.nad != "" {
				h.api.nads["apps/net-a"] = tc.nad
			}
			msg := h.mustFail("ADD", tc.code)
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "apps/p1") {
				t.Errorf("error %q does not name the pod and say %q", msg, tc.want)
			}
			h.wantSteps("invalid ADD")
		})
	}
}

func TestAddWithoutSecondaryNetworks(t *testing.T) {
	h := newHarness(t)
	h.api.pods["apps/p1"] = Pod{UID: "uid-1"}
	h.conf.DefaultNetwork = json.RawMessage(`{"cniVersion":"0.4.0","name":"pods","type":"fakebr","ip":"10.0.0.2/24"}`)
	out := h.mustRun("ADD")
	h.wantSteps("ADD", "ADD fakebr eth0 pods@0.4.0 -")
	// A 0.4.0 default network's result is returned as a 1.0.0 result.
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	ip := res["ips"].([]any)[0].(map[string]any)
	if res["cniVersion"] != CNIVersion || ip["version"] != nil || ip["address"] != "10.0.0.2/24" {
		t.Errorf("ADD returned %s", out)
	}
	want := `[{
    "name": "pods",
    "interface": "eth0",
    "ips": [
        "10.0.0.2"
    ],
    "mac": "02:00:00:00:00:01",
    "default": true,
    "dns": {
        "nameservers": [
            "192.0.2.53"
        ]
    }
}]`
	if got := h.api.statuses["apps/p1"]; got != want {
		t.Errorf("network-status\n%s\nwant\n%s", got, want)
	}
}

func TestAddNeedsThePodAndTheAPI(t *testing.T) {
	h := newHarness(t)
	h.args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=apps"
	h.mustFail("ADD", CodeInvalidEnvironment)
	h.args = "K8S_POD_NAMESPACE=apps;K8S_POD_NAME=p2"
	if msg := h.mustFail("ADD", CodeKubernetes); !strings.Contains(msg, "not found") {
		t.Errorf("ADD of a missing pod: %q", msg)
	}
	h.api = nil
	if msg := h.mustFail("ADD", CodeKubernetes); !strings.Contains(msg, "unreachable") {
		t.Errorf("ADD without the API: %q", msg)
	}
	h.wantSteps("failed ADDs")
}

func TestVersion(t *testing.T) {
	var stdout bytes.Buffer
	if code := Main(context.Background(), []string{"CNI_COMMAND=VERSION"}, strings.NewReader(`{"cniVersion":"1.0.0"}`), &stdout, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, stdout.String())
	}
	var v struct {
		CNIVersion        string   `json:"cniVersion"`
		SupportedVersions []string `json:"supportedVersions"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil || v.CNIVersion != CNIVersion || !reflect.DeepEqual(v.SupportedVersions, []string{CNIVersion}) {
		t.Errorf("VERSION answered %q (%v)", stdout.String(), err)
	}
}

func TestMainRejectsBadInput(t *testing.T) {
	h := newHarness(t)
	good, err := h.conf.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=c1", "CNI_NETNS=/run/netns/x", "CNI_IFNAME=eth0",
		"CNI_ARGS=K8S_POD_NAMESPACE=apps;K8S_POD_NAME=p1", "CNI_PATH=/opt/cni/bin"}
	for _, tc := range []struct {
		name string
		env  []string // replacing base's variable of the same name
		conf string
		code uint
		want string
	}{
		{"no command", []string{"CNI_COMMAND="}, string(good), CodeInvalidEnvironment, "CNI_COMMAND is not set"},
		{"unknown command", []string{"CNI_COMMAND=GC"}, string(good), CodeInvalidEnvironment, `"GC"`},
		{"container id", []string{"CNI_CONTAINERID=../x"}, string(good), CodeInvalidEnvironment, "CNI_CONTAINERID"},
		{"ifname", []string{"CNI_IFNAME=eth0:1"}, string(good), CodeInvalidEnvironment, "CNI_IFNAME"},
		{"no netns", []string{"CNI_NETNS="}, string(good), CodeInvalidEnvironment, "CNI_NETNS"},
		{"no path", []string{"CNI_PATH="}, string(good), CodeInvalidEnvironment, "CNI_PATH"},
		{"args", []string{"CNI_ARGS=K8S_POD_NAME"}, string(good), CodeInvalidEnvironment, "KEY=VALUE"},
		{"pod namespace", []string{"CNI_ARGS=K8S_POD_NAMESPACE=Apps;K8S_POD_NAME=p1"}, string(good), CodeInvalidEnvironment, "K8S_POD_NAMESPACE"},
		{"conf", nil, `{"cniVersion":"1.0.0"`, CodeInvalidConfig, "not a JSON object"},
		{"conf version", nil, strings.Replace(string(good), `"cniVersion": "1.0.0"`, `"cniVersion": "0.4.0"`, 1), CodeIncompatibleVersion, "want 1.0.0"},
		{"conf key", nil, strings.Replace(string(good), `"name"`, `"confDir": "/etc/cni/multus", "name"`, 1), CodeInvalidConfig, "unknown keys confDir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append(append([]string(nil), base...), tc.env...) // later entries win
			env = lastWins(env)
			var stdout bytes.Buffer
			code := Main(context.Background(), env, strings.NewReader(tc.conf), &stdout, h.api.dial)
			var e struct {
				Code uint   `json:"code"`
				Msg  string `json:"msg"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &e); err != nil || code == 0 || e.Code != tc.code || !strings.Contains(e.Msg, tc.want) {
				t.Errorf("exit %d, stdout %s: want code %d saying %q", code, stdout.String(), tc.code, tc.want)
			}
		})
	}
}

// lastWins keeps the last assignment of each variable of env.
func lastWins(env []string) []string {
	seen := map[string]bool{}
	var out []string
	for i := len(env) - 1; i >= 0; i-- {
		k, _, _ := strings.Cut(env[i], "=")
		if !seen[k] {
			seen[k] = true
			out = append([]string{env[i]}, out...)
		}
	}
	return out
}

func TestPluginNotFound(t *testing.T) {
	h := newHarness(t)
	h.api.nads["apps/net-a"] = `{"cniVersion":"1.0.0","type":"nosuchplugin"}`
	msg := h.mustFail("ADD", CodeDelegateFailed)
	if !strings.Contains(msg, fmt.Sprintf("plugin nosuchplugin not found in CNI_PATH %q", "/nonexistent:"+h.fakes.path)) {
		t.Errorf("error %q", msg)
	}
}
