package multinet

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
)

// NetworkStatus is one entry of the network-status annotation, in Multus'
// format: the network's name (namespace/name for secondary networks, the
// configuration's name for the default network), the pod's interface, its
// addresses without prefix length, its MAC, default on the default
// network's entry only, and the result's DNS ({} when empty).
type NetworkStatus struct {
	Name      string   `json:"name"`
	Interface string   `json:"interface,omitempty"`
	IPs       []string `json:"ips,omitempty"`
	Mac       string   `json:"mac,omitempty"`
	Default   bool     `json:"default,omitempty"`
	DNS       DNS      `json:"dns"`
}

// statusOf returns the network-status entry of a delegate's result: the
// result's interface in the pod named ifname (else its last interface in
// the pod, as Multus takes), and the addresses of that interface or of no
// interface in particular.
func statusOf(name, ifname string, isDefault bool, r Result) NetworkStatus {
	st := NetworkStatus{Name: name, Default: isDefault, DNS: r.DNS}
	index := -1
	for i, itf := range r.Interfaces {
		if itf.Sandbox != "" && (index < 0 || r.Interfaces[index].Name != ifname) {
			index = i
		}
	}
	if index >= 0 {
		st.Interface, st.Mac = r.Interfaces[index].Name, r.Interfaces[index].Mac
	}
	for _, ip := range r.IPs {
		if ip.Interface != nil && *ip.Interface != index {
			continue
		}
		if p, err := netip.ParsePrefix(ip.Address); err == nil { // ParseResult checked it
			st.IPs = append(st.IPs, p.Addr().String())
		}
	}
	return st
}

// RenderNetworkStatus renders the network-status annotation as Multus
// writes it: a JSON list of the entries, each indented by four spaces.
func RenderNetworkStatus(entries []NetworkStatus) (string, error) {
	parts := make([]string, len(entries))
	for i, e := range entries {
		b, err := json.MarshalIndent(e, "", "    ")
		if err != nil {
			return "", fmt.Errorf("network-status of %s: %w", e.Name, err)
		}
		parts[i] = string(b)
	}
	return "[" + strings.Join(parts, ",") + "]", nil
}
