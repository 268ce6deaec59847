package multinet

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The test binary doubles as fake CNI plugins: TestMain runs fakePlugin
// instead of the tests when fakePluginEnv is set, the plugin type being the
// name it was executed under (a symlink in a CNI_PATH directory).
const (
	fakePluginEnv = "MULTINET_TEST_FAKE_PLUGIN"
	// fakeLogEnv names the file each invocation appends a JSON line to.
	fakeLogEnv = "MULTINET_TEST_FAKE_LOG"
	// fakeStateEnv names a directory with a file per live attachment.
	fakeStateEnv = "MULTINET_TEST_FAKE_STATE"
	// fakeFailDelEnv names a plugin type whose DEL fails.
	fakeFailDelEnv = "MULTINET_TEST_FAKE_FAIL_DEL"
)

func TestMain(m *testing.M) {
	if os.Getenv(fakePluginEnv) != "" {
		os.Exit(fakePlugin())
	}
	os.Exit(m.Run())
}

// invocation of a fake plugin, as it recorded it.
type fakeCall struct {
	Command, Type, IfName, ContainerID, Netns, Args, Path string
	Name, CNIVersion                                      string
	PrevResult                                            json.RawMessage
}

// fakeConf is what the fake plugins read of their configuration: ip is the
// address ADD assigns (a first plugin), mac the MAC a chained plugin sets,
// fail the message ADD fails with.
type fakeConf struct {
	Name       string          `json:"name"`
	CNIVersion string          `json:"cniVersion"`
	IP         string          `json:"ip"`
	Mac        string          `json:"mac"`
	Fail       string          `json:"fail"`
	PrevResult json.RawMessage `json:"prevResult"`
}

// fakePlugin is a CNI plugin: ADD creates a state file and returns a
// result with one interface in the sandbox (or the previous result with
// its MAC changed), DEL removes the state file, CHECK succeeds when it
// exists.
func fakePlugin() int {
	typ := filepath.Base(os.Args[0])
	stdin, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fakeFail("1.0.0", 5, err.Error())
	}
	var conf fakeConf
	if err := json.Unmarshal(stdin, &conf); err != nil {
		return fakeFail("1.0.0", 6, err.Error())
	}
	call := fakeCall{Command: os.Getenv("CNI_COMMAND"), Type: typ, IfName: os.Getenv("CNI_IFNAME"),
		ContainerID: os.Getenv("CNI_CONTAINERID"), Netns: os.Getenv("CNI_NETNS"), Args: os.Getenv("CNI_ARGS"),
		Path: os.Getenv("CNI_PATH"), Name: conf.Name, CNIVersion: conf.CNIVersion, PrevResult: conf.PrevResult}
	line, _ := json.Marshal(call)
	f, err := os.OpenFile(os.Getenv(fakeLogEnv), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fakeFail(conf.CNIVersion, 5, err.Error())
	}
	fmt.Fprintf(f, "%s\n", line)
	f.Close()
	state := filepath.Join(os.Getenv(fakeStateEnv), call.ContainerID+"-"+call.IfName+"-"+typ)
	switch call.Command {
	case "ADD":
		if conf.Fail != "" {
			return fakeFail(conf.CNIVersion, 11, conf.Fail)
		}
		if err := os.WriteFile(state, nil, 0o600); err != nil {
			return fakeFail(conf.CNIVersion, 5, err.Error())
		}
		os.Stdout.Write(fakeResult(conf, call))
	case "DEL":
		if os.Getenv(fakeFailDelEnv) == typ {
			return fakeFail(conf.CNIVersion, 11, "DEL refused for the test")
		}
		os.Remove(state)
	case "CHECK":
		if _, err := os.Stat(state); err != nil {
			return fakeFail(conf.CNIVersion, 100, err.Error())
		}
	}
	return 0
}

func fakeResult(conf fakeConf, call fakeCall) []byte {
	if conf.PrevResult != nil {
		var r map[string]any
		_ = json.Unmarshal(conf.PrevResult, &r)
		if conf.Mac != "" {
			r["interfaces"].([]any)[0].(map[string]any)["mac"] = conf.Mac
		}
		out, _ := json.Marshal(r)
		return out
	}
	ip := map[string]any{"address": conf.IP, "interface": 0}
	if conf.CNIVersion == "0.4.0" {
		ip["version"] = map[bool]string{true: "6", false: "4"}[strings.Contains(conf.IP, ":")]
	}
	out, _ := json.Marshal(map[string]any{
		"cniVersion": conf.CNIVersion,
		"interfaces": []any{map[string]any{"name": call.IfName, "mac": "02:00:00:00:00:01", "sandbox": call.Netns}},
		"ips":        []any{ip},
		"dns":        map[string]any{"nameservers": []string{"192.0.2.53"}},
	})
	return out
}

func fakeFail(version string, code int, msg string) int {
	out, _ := json.Marshal(map[string]any{"cniVersion": version, "code": code, "msg": msg})
	os.Stdout.Write(out)
	return 1
}

// fakes is a CNI_PATH directory of fake plugins with their log and state.
type fakes struct {
	path, log, state string
}

// newFakes installs the test binary as plugins of the types.
func newFakes(t *testing.T, types ...string) *fakes {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := &fakes{path: filepath.Join(dir, "bin"), log: filepath.Join(dir, "calls.jsonl"), state: filepath.Join(dir, "state")}
	for _, d := range []string{f.path, f.state} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, typ := range types {
		if err := os.Symlink(self, filepath.Join(f.path, typ)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// env returns the environment of the fake plugins; under -race they would
// otherwise sleep a second at exit (the race runtime's atexit_sleep_ms).
func (f *fakes) env() []string {
	return []string{fakePluginEnv + "=1", fakeLogEnv + "=" + f.log, fakeStateEnv + "=" + f.state, "GORACE=atexit_sleep_ms=0"}
}

// calls returns the invocations recorded since the last call, and forgets
// them.
func (f *fakes) calls(t *testing.T) []fakeCall {
	t.Helper()
	data, err := os.ReadFile(f.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f.log); err != nil {
		t.Fatal(err)
	}
	var out []fakeCall
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c fakeCall
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("fake plugin log %q: %v", line, err)
		}
		out = append(out, c)
	}
	return out
}

// live returns the attachments the fake plugins hold.
func (f *fakes) live(t *testing.T) []string {
	t.Helper()
	return dirNames(t, f.state)
}
