package multinet

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func validConfig() Config {
	return Config{CNIVersion: "1.0.0", Name: "multinet", Type: "multinet", Kubeconfig: "/etc/multinet/kubeconfig",
		CacheDir: "/var/lib/multinet", LogFile: "/var/log/multinet.log",
		DefaultNetwork: json.RawMessage(`{"cniVersion":"1.0.0","name":"sllbrd-pods","plugins":[{"type":"bridge","bridge":"cni0"}]}`)}
}

func TestConfigRoundTrip(t *testing.T) {
	c := validConfig()
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	c.DefaultNetwork = nil
	def := back.DefaultNetwork
	back.DefaultNetwork = nil
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip: %+v, want %+v", back, c)
	}
	if nc, err := ParseNetConf(def, ""); err != nil || nc.Name != "sllbrd-pods" {
		t.Errorf("defaultNetwork after the round trip: %s (%v)", def, err)
	}
	// A runtime's "args" is ignored; no log file is fine.
	noLog := validConfig()
	noLog.LogFile = ""
	data, err = noLog.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// What runtimes add is ignored: args, runtimeConfig, and the prevResult
	// libcni passes on CHECK and DEL.
	for _, added := range []string{`"args": {"labels": {"a": "b"}}`, `"runtimeConfig": {"portMappings": []}`,
		`"prevResult": {"cniVersion": "1.0.0", "interfaces": [{"name": "eth0"}], "ips": [{"address": "10.244.0.10/24", "interface": 0}]}`} {
		with := strings.Replace(string(data), `"name"`, added+`, "name"`, 1)
		if _, err := ParseConfig([]byte(with)); err != nil {
			t.Errorf("config with %s: %v", added, err)
		}
	}
}

func TestConfigRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"version", func(c *Config) { c.CNIVersion = "0.4.0" }, `cniVersion "0.4.0", want 1.0.0`},
		{"name", func(c *Config) { c.Name = "" }, "network name"},
		{"type", func(c *Config) { c.Type = "multus" }, `type "multus"`},
		{"kubeconfig", func(c *Config) { c.Kubeconfig = "kubeconfig" }, "kubeconfig \"kubeconfig\" is not a clean absolute path"},
		{"cacheDir", func(c *Config) { c.CacheDir = "" }, "cacheDir"},
		{"cacheDir unclean", func(c *Config) { c.CacheDir = "/var/lib/../multinet" }, "cacheDir"},
		{"logFile", func(c *Config) { c.LogFile = "log" }, "logFile"},
		{"no default", func(c *Config) { c.DefaultNetwork = nil }, "no defaultNetwork"},
		{"default", func(c *Config) { c.DefaultNetwork = json.RawMessage(`{"cniVersion":"1.0.0","type":"bridge"}`) }, `defaultNetwork: network configuration has no "name"`},
	} {
		c := validConfig()
		tc.edit(&c)
		if _, err := c.Marshal(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Marshal: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
	good, err := validConfig().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ data, want string }{
		{`[]`, "not a JSON object"},
		{strings.Replace(string(good), `"name"`, `"confDir": "/etc/cni/multus", "name"`, 1), "unknown keys confDir"},
		{strings.Replace(string(good), `"/var/lib/multinet"`, `7`, 1), "cannot unmarshal"},
	} {
		if _, err := ParseConfig([]byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseConfig: error %v, want one saying %q", err, tc.want)
		}
	}
}
