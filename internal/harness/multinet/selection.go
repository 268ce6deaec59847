package multinet

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Selection is one secondary network a pod asks for: the
// NetworkAttachmentDefinition Namespace/Name, on the pod's interface
// Interface ("" for the default, net<N> with N the position in the
// annotation, from 1).
type Selection struct {
	Namespace string
	Name      string
	Interface string
}

// String is the network's name in network-status: namespace/name.
func (s Selection) String() string { return s.Namespace + "/" + s.Name }

// supportedKeys are the keys of a network selection element multinet
// implements; unsupportedKeys are the other keys Multus defines, refused
// rather than ignored.
var (
	supportedKeys   = []string{"name", "namespace", "interface"}
	unsupportedKeys = []string{"ips", "mac", "infiniband-guid", "interfaceRequest", "portMappings",
		"bandwidth", "cni-args", "default-route", "ipam-claim-reference"}
)

// ParseNetworks parses a pod's networks annotation in either of Multus'
// forms: a JSON list of network selection elements
// ([{"name":"a","namespace":"ns","interface":"eth5"}]; only name,
// namespace and interface are supported, other keys are refused), or a
// comma-separated list of [namespace/]name[@interface]. Namespaces default
// to podNamespace. An empty annotation asks for nothing. Names must be
// DNS-1123 (namespaces labels, networks subdomains), interfaces valid Linux
// names; at most maxNetworks networks.
func ParseNetworks(annotation, podNamespace string) ([]Selection, error) {
	annotation = strings.TrimSpace(annotation)
	if annotation == "" {
		return nil, nil
	}
	var sels []Selection
	var err error
	if strings.ContainsAny(annotation, "[{\"") { // Multus' test for the JSON form
		sels, err = parseJSONNetworks(annotation)
	} else {
		sels, err = parseShortNetworks(annotation)
	}
	if err != nil {
		return nil, fmt.Errorf("annotation %s: %w", NetworksAnnotation, err)
	}
	if len(sels) > maxNetworks {
		return nil, fmt.Errorf("annotation %s asks for %d networks, more than %d", NetworksAnnotation, len(sels), maxNetworks)
	}
	for i := range sels {
		s := &sels[i]
		if s.Namespace == "" {
			s.Namespace = podNamespace
		}
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("annotation %s: network %d: %w", NetworksAnnotation, i+1, err)
		}
	}
	return sels, nil
}

func (s Selection) check() error {
	if err := checkNamespace(s.Namespace); err != nil {
		return err
	}
	if err := checkObjectName("network", s.Name); err != nil {
		return err
	}
	if s.Interface != "" {
		return checkIfName(s.Interface)
	}
	return nil
}

func parseJSONNetworks(annotation string) ([]Selection, error) {
	var elems []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(annotation), &elems); err != nil {
		return nil, fmt.Errorf("not a JSON list of network selection objects: %w", err)
	}
	sels := make([]Selection, 0, len(elems))
	for i, e := range elems {
		if e == nil {
			return nil, fmt.Errorf("network %d is null", i+1)
		}
		if err := checkKeys(e); err != nil {
			return nil, fmt.Errorf("network %d: %w", i+1, err)
		}
		var s Selection
		for key, out := range map[string]*string{"name": &s.Name, "namespace": &s.Namespace, "interface": &s.Interface} {
			if err := field(e, key, out); err != nil {
				return nil, fmt.Errorf("network %d: %w", i+1, err)
			}
		}
		if s.Name == "" {
			return nil, fmt.Errorf("network %d has no \"name\"", i+1)
		}
		sels = append(sels, s)
	}
	return sels, nil
}

// checkKeys refuses keys multinet does not implement, naming them.
func checkKeys(elem map[string]json.RawMessage) error {
	var unsupported, unknown []string
	for k := range elem {
		switch {
		case slices.Contains(supportedKeys, k):
		case slices.Contains(unsupportedKeys, k):
			unsupported = append(unsupported, k)
		default:
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unsupported)
	sort.Strings(unknown)
	switch {
	case len(unsupported) > 0:
		return fmt.Errorf("%s not supported by %s (it implements %s)",
			strings.Join(unsupported, ", "), TypeName, strings.Join(supportedKeys, ", "))
	case len(unknown) > 0:
		return fmt.Errorf("unknown keys %s", strings.Join(unknown, ", "))
	}
	return nil
}

// parseShortNetworks parses "a, ns/b, c@eth5".
func parseShortNetworks(annotation string) ([]Selection, error) {
	var sels []Selection
	for i, item := range strings.Split(annotation, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("network %d is empty", i+1)
		}
		if strings.Count(item, "/") > 1 || strings.Count(item, "@") > 1 {
			return nil, fmt.Errorf("network %d (%q): want [namespace/]name[@interface]", i+1, item)
		}
		var s Selection
		rest := item
		if ns, name, ok := strings.Cut(rest, "/"); ok {
			s.Namespace, rest = strings.TrimSpace(ns), name
			if s.Namespace == "" {
				return nil, fmt.Errorf("network %d (%q): empty namespace before '/'", i+1, item)
			}
		}
		if name, ifname, ok := strings.Cut(rest, "@"); ok {
			rest, s.Interface = name, strings.TrimSpace(ifname)
			if s.Interface == "" {
				return nil, fmt.Errorf("network %d (%q): empty interface after '@'", i+1, item)
			}
		}
		s.Name = strings.TrimSpace(rest)
		if s.Name == "" {
			return nil, fmt.Errorf("network %d (%q) has no name", i+1, item)
		}
		sels = append(sels, s)
	}
	return sels, nil
}
