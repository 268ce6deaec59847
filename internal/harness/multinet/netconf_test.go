package multinet

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestParseNetConf(t *testing.T) {
	single, err := ParseNetConf([]byte(`{"cniVersion":"0.4.0","type":"macvlan","master":"eth1"}`), "nad-a")
	if err != nil {
		t.Fatal(err)
	}
	if single.Name != "nad-a" || single.CNIVersion != "0.4.0" || len(single.Plugins) != 1 || single.pluginType(0) != "macvlan" {
		t.Errorf("single conf: %+v", single)
	}
	list, err := ParseNetConf([]byte(`{"cniVersion":"1.0.0","name":"own","disableCheck":true,
		"plugins":[{"type":"bridge","bridge":"br1"},{"type":"tuning","mac":"02:00:00:00:00:07"}]}`), "nad-a")
	if err != nil {
		t.Fatal(err)
	}
	if list.Name != "own" || !list.DisableCheck || len(list.Plugins) != 2 || list.pluginType(1) != "tuning" {
		t.Errorf("list: %+v", list)
	}
	// Each plugin gets the list's name and version, and prevResult when given.
	in, err := list.pluginStdin(1, json.RawMessage(`{"cniVersion":"1.0.0"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"cniVersion":"1.0.0","mac":"02:00:00:00:00:07","name":"own","prevResult":{"cniVersion":"1.0.0"},"type":"tuning"}`
	if string(in) != want {
		t.Errorf("stdin of plugin 1: %s\nwant %s", in, want)
	}
	in, err = single.pluginStdin(0, nil)
	if err != nil || string(in) != `{"cniVersion":"0.4.0","master":"eth1","name":"nad-a","type":"macvlan"}` {
		t.Errorf("stdin of a single conf: %s (%v)", in, err)
	}
	// Cached as a list, read back the same.
	data, err := json.Marshal(single)
	if err != nil {
		t.Fatal(err)
	}
	var back NetConf
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, single) {
		t.Errorf("round trip through %s: %+v (%v)", data, back, err)
	}
}

func TestParseNetConfRejects(t *testing.T) {
	for _, tc := range []struct{ conf, want string }{
		{``, "not a JSON object"},
		{`[]`, "not a JSON object"},
		{`{"cniVersion":"1.0.0","type":"x"`, "not a JSON object"},
		{`{"type":"bridge"}`, `cniVersion "" is not supported`},
		{`{"cniVersion":"0.3.1","type":"bridge"}`, `cniVersion "0.3.1" is not supported`},
		{`{"cniVersion":1,"type":"bridge"}`, `"cniVersion" must be a string`},
		{`{"cniVersion":"1.0.0","name":"a b","type":"bridge"}`, `network name "a b"`},
		{`{"cniVersion":"1.0.0","type":"bridge","plugins":[]}`, "both"},
		{`{"cniVersion":"1.0.0"}`, "neither"},
		{`{"cniVersion":"1.0.0","plugins":[]}`, "is empty"},
		{`{"cniVersion":"1.0.0","plugins":{}}`, "not a list"},
		{`{"cniVersion":"1.0.0","plugins":[1]}`, "plugin 0: not a JSON object"},
		{`{"cniVersion":"1.0.0","plugins":[{"bridge":"x"}]}`, `plugin 0 has no "type"`},
		{`{"cniVersion":"1.0.0","plugins":[{"type":"bridge"},{"type":"/bin/sh"}]}`, `plugin 1: plugin type "/bin/sh"`},
		{`{"cniVersion":"1.0.0","plugins":[{"type":"multinet"}]}`, "multinet itself"},
		{`{"cniVersion":"1.0.0","disableCheck":"yes","plugins":[{"type":"bridge"}]}`, `"disableCheck" must be a bool`},
	} {
		_, err := ParseNetConf([]byte(tc.conf), "nad")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseNetConf(%s): error %v, want one saying %q", tc.conf, err, tc.want)
		}
	}
	if _, err := ParseNetConf([]byte(`{"cniVersion":"1.0.0","type":"bridge"}`), ""); err == nil || !strings.Contains(err.Error(), `no "name"`) {
		t.Errorf("a nameless conf without a default name: %v", err)
	}
}
