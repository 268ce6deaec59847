package multinet

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// NetConf is a delegated network configuration: a CNI configuration list,
// or a single configuration seen as a list of one plugin (as libcni does).
type NetConf struct {
	CNIVersion   string
	Name         string
	DisableCheck bool
	// Plugins are the plugins' configuration objects, in order; each has a
	// "type" naming a plugin other than multinet.
	Plugins []map[string]json.RawMessage
}

// ParseNetConf parses and validates a network configuration (a conflist
// with "plugins", or a single conf with "type"). Without a "name" the
// network is named defaultName; an empty defaultName makes "name" required.
func ParseNetConf(data []byte, defaultName string) (NetConf, error) {
	obj, err := jsonObject(data)
	if err != nil {
		return NetConf{}, fmt.Errorf("network configuration: %w", err)
	}
	var nc NetConf
	if err := field(obj, "cniVersion", &nc.CNIVersion); err != nil {
		return NetConf{}, err
	}
	if err := checkVersion("network configuration", nc.CNIVersion, delegateVersions); err != nil {
		return NetConf{}, err
	}
	if err := field(obj, "name", &nc.Name); err != nil {
		return NetConf{}, err
	}
	if nc.Name == "" {
		nc.Name = defaultName
	}
	if nc.Name == "" {
		return NetConf{}, fmt.Errorf("network configuration has no \"name\"")
	}
	if err := checkCNIName("network name", nc.Name); err != nil {
		return NetConf{}, fmt.Errorf("network configuration: %w", err)
	}
	rawPlugins, isList := obj["plugins"]
	_, hasType := obj["type"]
	switch {
	case isList && hasType:
		return NetConf{}, fmt.Errorf("network configuration %s has both \"plugins\" and \"type\": a list or a single plugin, not both", nc.Name)
	case isList:
		if err := field(obj, "disableCheck", &nc.DisableCheck); err != nil {
			return NetConf{}, err
		}
		var list []json.RawMessage
		if err := json.Unmarshal(rawPlugins, &list); err != nil {
			return NetConf{}, fmt.Errorf("network configuration %s: \"plugins\" is not a list: %w", nc.Name, err)
		}
		if len(list) == 0 {
			return NetConf{}, fmt.Errorf("network configuration %s: \"plugins\" is empty", nc.Name)
		}
		for i, raw := range list {
			p, err := jsonObject(raw)
			if err != nil {
				return NetConf{}, fmt.Errorf("network configuration %s: plugin %d: %w", nc.Name, i, err)
			}
			nc.Plugins = append(nc.Plugins, p)
		}
	case hasType:
		nc.Plugins = []map[string]json.RawMessage{obj}
	default:
		return NetConf{}, fmt.Errorf("network configuration %s has neither \"plugins\" nor \"type\"", nc.Name)
	}
	for i, p := range nc.Plugins {
		var typ string
		if err := field(p, "type", &typ); err != nil {
			return NetConf{}, fmt.Errorf("network configuration %s: plugin %d: %w", nc.Name, i, err)
		}
		if typ == "" {
			return NetConf{}, fmt.Errorf("network configuration %s: plugin %d has no \"type\"", nc.Name, i)
		}
		if err := checkCNIName("plugin type", typ); err != nil {
			return NetConf{}, fmt.Errorf("network configuration %s: plugin %d: %w", nc.Name, i, err)
		}
		if typ == TypeName {
			return NetConf{}, fmt.Errorf("network configuration %s: plugin %d is %s itself", nc.Name, i, TypeName)
		}
	}
	return nc, nil
}

// pluginType returns the type of plugin i (validated by ParseNetConf).
func (nc NetConf) pluginType(i int) string {
	var typ string
	_ = json.Unmarshal(nc.Plugins[i]["type"], &typ) // ParseNetConf checked it is a string
	return typ
}

// pluginStdin returns what plugin i reads on stdin: its configuration with
// the list's name and cniVersion, and prevResult when not nil (libcni's
// rules for executing a list).
func (nc NetConf) pluginStdin(i int, prevResult json.RawMessage) ([]byte, error) {
	conf := make(map[string]json.RawMessage, len(nc.Plugins[i])+3)
	for k, v := range nc.Plugins[i] {
		conf[k] = v
	}
	conf["name"], _ = json.Marshal(nc.Name) // strings always marshal
	conf["cniVersion"], _ = json.Marshal(nc.CNIVersion)
	delete(conf, "prevResult")
	if prevResult != nil {
		conf["prevResult"] = prevResult
	}
	out, err := json.Marshal(conf)
	if err != nil {
		return nil, fmt.Errorf("configuration of plugin %s of network %s: %w", nc.pluginType(i), nc.Name, err)
	}
	return out, nil
}

// netConfJSON is NetConf as multinet caches it: always a list.
type netConfJSON struct {
	CNIVersion   string                       `json:"cniVersion"`
	Name         string                       `json:"name"`
	DisableCheck bool                         `json:"disableCheck,omitempty"`
	Plugins      []map[string]json.RawMessage `json:"plugins"`
}

// MarshalJSON renders nc as a configuration list.
func (nc NetConf) MarshalJSON() ([]byte, error) {
	return json.Marshal(netConfJSON(nc))
}

// UnmarshalJSON parses and validates a configuration (ParseNetConf with
// "name" required).
func (nc *NetConf) UnmarshalJSON(data []byte) error {
	parsed, err := ParseNetConf(data, "")
	if err != nil {
		return err
	}
	*nc = parsed
	return nil
}

// jsonObject decodes data as one JSON object, keys to raw values.
func jsonObject(data []byte) (map[string]json.RawMessage, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return obj, nil
}

// field decodes obj[key] into out when present and not null; its error
// names the key and the expected type.
func field[T any](obj map[string]json.RawMessage, key string, out *T) error {
	raw, ok := obj[key]
	if !ok || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%q must be a %T: %w", key, *out, err)
	}
	return nil
}
