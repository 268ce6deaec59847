package multinet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
)

// Result is what multinet reads of a delegate's CNI result (versions
// 0.4.0 and 1.0.0 share these fields): enough for network-status.
type Result struct {
	CNIVersion string            `json:"cniVersion"`
	Interfaces []ResultInterface `json:"interfaces,omitempty"`
	IPs        []ResultIP        `json:"ips,omitempty"`
	DNS        DNS               `json:"dns"`
}

// ResultInterface is an interface of a CNI result; Sandbox is set for
// interfaces inside the pod.
type ResultInterface struct {
	Name    string `json:"name"`
	Mac     string `json:"mac,omitempty"`
	Sandbox string `json:"sandbox,omitempty"`
}

// ResultIP is an address of a CNI result (Address in CIDR form); Interface
// indexes Interfaces.
type ResultIP struct {
	Address   string `json:"address"`
	Gateway   string `json:"gateway,omitempty"`
	Interface *int   `json:"interface,omitempty"`
}

// DNS is the DNS part of a CNI result and of a network-status entry.
type DNS struct {
	Nameservers []string `json:"nameservers,omitempty"`
	Domain      string   `json:"domain,omitempty"`
	Search      []string `json:"search,omitempty"`
	Options     []string `json:"options,omitempty"`
}

// ParseResult parses the result of a network configured with version: a
// JSON object whose cniVersion is version (or absent), whose addresses are
// CIDRs and whose interface indexes are in range.
func ParseResult(data []byte, version string) (Result, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return Result{}, fmt.Errorf("empty result")
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return Result{}, fmt.Errorf("result is not a CNI result object: %w", err)
	}
	if r.CNIVersion == "" {
		r.CNIVersion = version
	}
	if r.CNIVersion != version {
		return Result{}, fmt.Errorf("result has cniVersion %q, its configuration %q", r.CNIVersion, version)
	}
	for i, ip := range r.IPs {
		if _, err := netip.ParsePrefix(ip.Address); err != nil {
			return Result{}, fmt.Errorf("result ips[%d]: %w", i, err)
		}
		if ip.Interface != nil && (*ip.Interface < 0 || *ip.Interface >= len(r.Interfaces)) {
			return Result{}, fmt.Errorf("result ips[%d] names interface %d of %d", i, *ip.Interface, len(r.Interfaces))
		}
	}
	return r, nil
}

// ConvertResult returns a result of a configuration of version from
// (0.4.0 or 1.0.0) as a CNIVersion (1.0.0) result: the same object
// without the "version" of each address, which 1.0.0 dropped. Fields
// multinet does not know are kept.
func ConvertResult(data []byte, from string) ([]byte, error) {
	if from == CNIVersion {
		return data, nil
	}
	if from != "0.4.0" {
		return nil, fmt.Errorf("cannot convert a result of cniVersion %q to %s", from, CNIVersion)
	}
	obj, err := jsonObject(data)
	if err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	obj["cniVersion"], _ = json.Marshal(CNIVersion) // strings always marshal
	if raw, ok := obj["ips"]; ok {
		var ips []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &ips); err != nil {
			return nil, fmt.Errorf("result ips: %w", err)
		}
		for _, ip := range ips {
			delete(ip, "version")
		}
		if obj["ips"], err = json.Marshal(ips); err != nil {
			return nil, fmt.Errorf("result ips: %w", err)
		}
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	return out, nil
}
