package cri

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
)

// infoKey is the key of the verbose status map that containerd and CRI-O
// fill with a JSON document holding the sandbox's OCI runtime spec.
const infoKey = "info"

// sandboxInfo is the part of that document read here. containerd adds
// netNamespaceClosed; CRI-O does not (absent reads as false).
type sandboxInfo struct {
	NetNSClosed bool         `json:"netNamespaceClosed"`
	RuntimeSpec *runtimeSpec `json:"runtimeSpec"`
}

// runtimeSpec, linuxSpec and namespace are the OCI runtime spec's fields
// that name the sandbox's namespaces.
type runtimeSpec struct {
	Linux *linuxSpec `json:"linux"`
}

type linuxSpec struct {
	Namespaces []namespace `json:"namespaces"`
}

type namespace struct {
	Type string `json:"type"`
	Path string `json:"path"`
}

// netNSFromInfo returns the network namespace path of a verbose sandbox
// status's info map, checked: one network entry, an absolute clean path.
func netNSFromInfo(info map[string]string) (string, error) {
	doc, ok := info[infoKey]
	if !ok || doc == "" {
		return "", fmt.Errorf("verbose status has no %q document (a runtime other than containerd or CRI-O?)", infoKey)
	}
	var si sandboxInfo
	if err := json.Unmarshal([]byte(doc), &si); err != nil {
		return "", fmt.Errorf("verbose status %q: %w", infoKey, err)
	}
	if si.NetNSClosed {
		return "", fmt.Errorf("%w: the runtime closed the sandbox's network namespace", ErrNoSandbox)
	}
	if si.RuntimeSpec == nil || si.RuntimeSpec.Linux == nil {
		return "", errors.New("verbose status: no runtimeSpec.linux")
	}
	var paths []string
	for _, ns := range si.RuntimeSpec.Linux.Namespaces {
		if ns.Type == "network" {
			paths = append(paths, ns.Path)
		}
	}
	switch {
	case len(paths) == 0:
		// In OCI terms the sandbox shares the runtime's namespace, which
		// contradicts the POD mode of the CRI status: refuse both readings.
		return "", errors.New("runtimeSpec.linux.namespaces has no network namespace although the sandbox's mode is POD")
	case len(paths) > 1:
		return "", fmt.Errorf("runtimeSpec.linux.namespaces has %d network namespaces %q", len(paths), paths)
	}
	p := paths[0]
	switch {
	case p == "":
		return "", errors.New("the network namespace has no path (the runtime did not pin it to a file)")
	case !filepath.IsAbs(p):
		return "", fmt.Errorf("network namespace path %q is not absolute", p)
	case filepath.Clean(p) != p:
		return "", fmt.Errorf("network namespace path %q is not clean", p)
	}
	return p, nil
}
