package multinet

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Config is multinet's own CNI configuration, the file ConfFileName in the
// runtime's CNI conf dir, for example
//
//	{"cniVersion":"1.0.0","name":"multinet","type":"multinet",
//	 "kubeconfig":"/etc/multinet/kubeconfig","cacheDir":"/var/lib/multinet",
//	 "logFile":"/var/log/multinet.log",
//	 "defaultNetwork":{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"bridge",...}]}}
type Config struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Type       string `json:"type"`
	// Kubeconfig is the file multinet reads pods and
	// NetworkAttachmentDefinitions with and patches pods with (the
	// permissions of ClusterRoleYAML).
	Kubeconfig string `json:"kubeconfig"`
	// CacheDir keeps what each ADD delegated, for DEL and CHECK.
	CacheDir string `json:"cacheDir"`
	// LogFile gets one line per action; empty: no log.
	LogFile string `json:"logFile,omitempty"`
	// DefaultNetwork is the pod network's configuration (a conflist or a
	// single conf), delegated on the runtime's interface (eth0).
	DefaultNetwork json.RawMessage `json:"defaultNetwork"`
}

// configKeys are the keys of Config, and those runtimes add, which are
// ignored: "args", "runtimeConfig", and "prevResult", the cached result of
// ADD that libcni (containerd's CNI library) passes on CHECK and DEL, as the
// CNI specification asks of runtimes since 0.4.0. multinet keeps what it
// needs for DEL and CHECK in its own cache.
var configKeys = []string{"cniVersion", "name", "type", "kubeconfig", "cacheDir", "logFile", "defaultNetwork", "args", "runtimeConfig", "prevResult"}

// ParseConfig parses and validates multinet's configuration strictly:
// unknown keys are errors.
func ParseConfig(data []byte) (Config, error) {
	obj, err := jsonObject(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s configuration: %w", TypeName, err)
	}
	var unknown []string
	for k := range obj {
		if !slices.Contains(configKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return Config{}, fmt.Errorf("%s configuration: unknown keys %s (%s must be the only plugin of its list)",
			TypeName, strings.Join(unknown, ", "), TypeName)
	}
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return Config{}, fmt.Errorf("%s configuration: %w", TypeName, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate returns an error naming the first invalid field.
func (c Config) Validate() error {
	_, err := c.defaultNetConf()
	return err
}

// defaultNetConf validates c and returns its parsed default network.
func (c Config) defaultNetConf() (NetConf, error) {
	if c.CNIVersion != CNIVersion {
		return NetConf{}, codef(CodeIncompatibleVersion, "%s configuration: cniVersion %q, want %s", TypeName, c.CNIVersion, CNIVersion)
	}
	if err := checkCNIName("network name", c.Name); err != nil {
		return NetConf{}, fmt.Errorf("%s configuration: %w", TypeName, err)
	}
	if c.Type != TypeName {
		return NetConf{}, fmt.Errorf("%s configuration: type %q, want %q", TypeName, c.Type, TypeName)
	}
	for _, p := range []struct{ key, path string }{{"kubeconfig", c.Kubeconfig}, {"cacheDir", c.CacheDir}, {"logFile", c.LogFile}} {
		if p.path == "" && p.key == "logFile" {
			continue
		}
		if !filepath.IsAbs(p.path) || filepath.Clean(p.path) != p.path {
			return NetConf{}, fmt.Errorf("%s configuration: %s %q is not a clean absolute path", TypeName, p.key, p.path)
		}
	}
	if len(c.DefaultNetwork) == 0 {
		return NetConf{}, fmt.Errorf("%s configuration: no defaultNetwork", TypeName)
	}
	nc, err := ParseNetConf(c.DefaultNetwork, "")
	if err != nil {
		return NetConf{}, fmt.Errorf("%s configuration: defaultNetwork: %w", TypeName, err)
	}
	return nc, nil
}

// Marshal validates c and renders it as the content of ConfFileName.
func (c Config) Marshal() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("%s configuration: %w", TypeName, err)
	}
	return append(out, '\n'), nil
}
