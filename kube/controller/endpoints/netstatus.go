package endpoints

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/model"
)

// Fault says why a pod that the Service selects is not an endpoint; the
// values are the reasons of the Warning Events on the pod and the values of
// the reason label of the controller's metric.
type Fault string

// The faults of a selected pod. Succeeded and Failed pods, and pods that
// are still Pending without network-status, are left out without a fault.
const (
	FaultNoNetworkStatus      Fault = "NoNetworkStatus"
	FaultInvalidNetworkStatus Fault = "InvalidNetworkStatus"
	FaultNoAddressOnNetwork   Fault = "NoAddressOnNetwork"
	// FaultDuplicateAddress: another endpoint has one of the pod's
	// addresses and comes first (identifiers.Duplicate).
	FaultDuplicateAddress Fault = "DuplicateAddress"
)

// Faults are all the faults, in a fixed order.
var Faults = []Fault{FaultNoNetworkStatus, FaultInvalidNetworkStatus, FaultNoAddressOnNetwork, FaultDuplicateAddress}

// Addresses are the endpoint addresses of one pod; an invalid Addr means
// the pod has none in that family.
type Addresses struct {
	V4, V6 netip.Addr
}

// Has reports whether a has an address of either family.
func (a Addresses) Has() bool { return a.V4.IsValid() || a.V6.IsValid() }

// networkStatus is one entry of the Multus network-status annotation.
type networkStatus struct {
	Name      string   `json:"name"`
	Interface string   `json:"interface"`
	IPs       []string `json:"ips"`
	Default   bool     `json:"default"`
}

// PodAddresses reads a pod's endpoint addresses on the Gateway's networks
// and subnets from its network-status annotation. When it finds none, the
// Fault and message say why.
func PodAddresses(pod *corev1.Pod, gw model.Gateway) (Addresses, Fault, string) {
	raw, ok := pod.Annotations[kube.AnnotationNetworkStatus]
	if !ok {
		return Addresses{}, FaultNoNetworkStatus, "no annotation " + kube.AnnotationNetworkStatus + " (is Multus running?)"
	}
	var entries []networkStatus
	if err := json.Unmarshal([]byte(raw), &entries); err != nil {
		return Addresses{}, FaultInvalidNetworkStatus,
			fmt.Sprintf("annotation %s is not a JSON list of {name, interface, ips}: %v", kube.AnnotationNetworkStatus, err)
	}
	var out Addresses
	var bad []string
	for _, e := range entries {
		if e.Default || !onNetwork(e.Name, pod.Namespace, gw.Networks) {
			continue
		}
		for _, s := range e.IPs {
			a, err := parseIP(s)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", e.Name, err))
				continue
			}
			if inSubnets(a, gw.Subnets) {
				out.add(a)
			}
		}
	}
	switch {
	case out.Has():
		return out, "", ""
	case len(bad) > 0:
		return out, FaultInvalidNetworkStatus, fmt.Sprintf("annotation %s: %s", kube.AnnotationNetworkStatus, strings.Join(bad, "; "))
	}
	return out, FaultNoAddressOnNetwork, fmt.Sprintf("no address in the Gateway's network-subnets %v on its networks %s",
		gw.Subnets, networkNames(gw.Networks))
}

// add keeps the lowest address of each family.
func (a *Addresses) add(addr netip.Addr) {
	slot := &a.V6
	if addr.Is4() {
		slot = &a.V4
	}
	if !slot.IsValid() || addr.Less(*slot) {
		*slot = addr
	}
}

// onNetwork reports whether a network-status entry name is one of the
// Gateway's networks: written as in the Gateway, or, for a name without a
// namespace, prefixed with the pod's namespace as Multus writes it.
func onNetwork(name, podNamespace string, networks []model.Network) bool {
	for _, n := range networks {
		if name == n.Name || (!strings.Contains(n.Name, "/") && name == podNamespace+"/"+n.Name) {
			return true
		}
	}
	return false
}

// parseIP accepts an address, or an address with a prefix length.
func parseIP(s string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%q is not an IP address", s)
	}
	return p.Addr().Unmap(), nil
}

func inSubnets(a netip.Addr, subnets []netip.Prefix) bool {
	for _, p := range subnets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func networkNames(networks []model.Network) string {
	var names []string
	for _, n := range networks {
		names = append(names, n.Name)
	}
	return "[" + strings.Join(names, " ") + "]"
}
