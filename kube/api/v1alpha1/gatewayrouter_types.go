package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults of the GatewayRouter fields. The API server applies them through
// the CRD; kube/translate applies the same values to objects read from files.
const (
	DefaultBGPHoldTime   = "90s"
	DefaultBGPPort       = 179
	DefaultBFDMinTx      = "300ms"
	DefaultBFDMinRx      = "300ms"
	DefaultBFDMultiplier = 3
)

// Bounds of the GatewayRouter fields, checked by the CRD and by kube/translate.
const (
	MinBGPHoldTime   = "3s"
	MaxBGPHoldTime   = "65535s"
	MinBFDInterval   = "10ms"
	MaxBFDInterval   = "60s"
	MinBFDMultiplier = 1
	MaxBFDMultiplier = 255
)

// GatewayRouterSpec says how the LB reaches one data-centre gateway: either
// over BGP (bgp) or as a static next hop (static), never both.
//
// +kubebuilder:validation:XValidation:rule="has(self.bgp) != has(self.static)",message="exactly one of bgp and static must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.static) || !has(self.static.bfd) || !has(self.static.bfd.multihop) || !self.static.bfd.multihop",message="multihop BFD needs bgp: a static next hop is directly connected"
// +kubebuilder:validation:XValidation:rule="!has(self.bgp) || !has(self.bgp.bfd) || !has(self.bgp.bfd.multihop) || !self.bgp.bfd.multihop || ((!isIP(self.address) || ip(self.address).family() == 4 || !ip(self.address).isLinkLocalUnicast()) && (!has(self.bgp.bfd.localAddress) || !isIP(self.bgp.bfd.localAddress) || ip(self.bgp.bfd.localAddress).family() == 4 || !ip(self.bgp.bfd.localAddress).isLinkLocalUnicast()))",message="multihop BFD needs addresses that are not IPv6 link-local"
// +kubebuilder:validation:XValidation:rule="!has(self.bgp) || !has(self.bgp.bfd) || !has(self.bgp.bfd.localAddress) || !isIP(self.address) || !isIP(self.bgp.bfd.localAddress) || ip(self.bgp.bfd.localAddress).family() == ip(self.address).family()",message="bfd.localAddress must be of the address family of address"
// +kubebuilder:validation:XValidation:rule="!has(self.static) || !has(self.static.bfd) || !has(self.static.bfd.localAddress) || !isIP(self.address) || !isIP(self.static.bfd.localAddress) || ip(self.static.bfd.localAddress).family() == ip(self.address).family()",message="bfd.localAddress must be of the address family of address"
type GatewayRouterSpec struct {
	// Address is the gateway's IP address (the BGP peer or next hop).
	//
	// +required
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="must be an IPv4 or IPv6 address"
	Address string `json:"address"`

	// Interface is the LB's network interface towards the gateway.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	Interface string `json:"interface"`

	// BGP peers with the gateway.
	//
	// +optional
	BGP *BGPSpec `json:"bgp,omitempty"`

	// Static uses the gateway as a next hop without BGP.
	//
	// +optional
	Static *StaticSpec `json:"static,omitempty"`
}

// BGPSpec holds the BGP session parameters.
type BGPSpec struct {
	// LocalASN is the LB's autonomous system number (4-byte ASNs allowed).
	//
	// +required
	// +kubebuilder:validation:Format=""
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967295
	LocalASN uint32 `json:"localASN"`

	// RemoteASN is the gateway's autonomous system number.
	//
	// +required
	// +kubebuilder:validation:Format=""
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967295
	RemoteASN uint32 `json:"remoteASN"`

	// HoldTime is the BGP hold time, a duration such as "90s", 3s..65535s.
	//
	// +optional
	// +kubebuilder:default="90s"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('3s') && duration(self) <= duration('65535s')",message="must be a duration between 3s and 65535s"
	HoldTime string `json:"holdTime,omitempty"`

	// LocalPort is the TCP port the LB's BGP speaker uses.
	//
	// +optional
	// +kubebuilder:default=179
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	LocalPort int32 `json:"localPort,omitempty"`

	// RemotePort is the gateway's BGP TCP port.
	//
	// +optional
	// +kubebuilder:default=179
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	RemotePort int32 `json:"remotePort,omitempty"`

	// BFD supervises the BGP session.
	//
	// +optional
	BFD *BFDSpec `json:"bfd,omitempty"`
}

// StaticSpec is a gateway used without BGP.
type StaticSpec struct {
	// BFD supervises the next hop.
	//
	// +optional
	BFD *BFDSpec `json:"bfd,omitempty"`
}

// BFDSpec holds the BFD session parameters. Switch turns BFD on.
type BFDSpec struct {
	// Switch enables BFD; absent or false means BFD is off.
	//
	// +optional
	Switch bool `json:"switch,omitempty"`

	// MinTx is the desired minimum transmit interval, 10ms..60s.
	//
	// +optional
	// +kubebuilder:default="300ms"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10ms') && duration(self) <= duration('60s')",message="must be a duration between 10ms and 60s"
	MinTx string `json:"minTx,omitempty"`

	// MinRx is the required minimum receive interval, 10ms..60s.
	//
	// +optional
	// +kubebuilder:default="300ms"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10ms') && duration(self) <= duration('60s')",message="must be a duration between 10ms and 60s"
	MinRx string `json:"minRx,omitempty"`

	// Multiplier is the number of missed packets that declares the session
	// down, 1..255.
	//
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=255
	Multiplier int32 `json:"multiplier,omitempty"`

	// Multihop runs the session as multihop BFD (RFC 5883: UDP port 4784,
	// any received TTL) instead of single hop (RFC 5881: port 3784, TTL
	// 255), for a gateway that is not directly connected. Only with bgp,
	// and not with IPv6 link-local addresses (the session is not tied to an
	// interface).
	//
	// +optional
	Multihop bool `json:"multihop,omitempty"`

	// LocalAddress is the source address of the BFD packets, of the family
	// of address. When empty the kernel uses the source address of its
	// route to the gateway. Peers such as FRR and BIRD identify a multihop
	// session by its two addresses: set it to the address the gateway is
	// configured with when the route's source address differs.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="must be an IPv4 or IPv6 address"
	LocalAddress string `json:"localAddress,omitempty"`
}

// GatewayRouterStatus is the observed state of a GatewayRouter.
type GatewayRouterStatus struct {
	// Conditions describe whether the router was accepted and its sessions.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GatewayRouter is a data-centre gateway that the Gateway named by the label
// service.kubernetes.io/service-proxy-name announces its VIPs to.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.address`
// +kubebuilder:printcolumn:name="Interface",type=string,JSONPath=`.spec.interface`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GatewayRouter struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GatewayRouterSpec   `json:"spec"`
	Status GatewayRouterStatus `json:"status,omitempty"`
}

// GatewayRouterList is a list of GatewayRouters.
//
// +kubebuilder:object:root=true
type GatewayRouterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GatewayRouter `json:"items"`
}
