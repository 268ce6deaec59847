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
	// MaxTTLSecurityHops bounds spec.bgp.ttlSecurity.hops: the lowest TTL
	// accepted is 256-hops, so 254 hops still demand a TTL of 2.
	MaxTTLSecurityHops = 254
	// MaxCommunities bounds spec.bgp.communities and largeCommunities.
	MaxCommunities = 32
)

// Defaults of the GatewayRouter's BGP session protection.
const (
	DefaultPasswordKey     = "password"
	DefaultTTLSecurityHops = 1
)

// GatewayRouterSpec says how the LB reaches one data-centre gateway: either
// over BGP (bgp) or as a static next hop (static), never both.
//
// +kubebuilder:validation:XValidation:rule="has(self.bgp) != has(self.static)",message="exactly one of bgp and static must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.static) || !has(self.static.bfd) || !has(self.static.bfd.multihop) || !self.static.bfd.multihop",message="multihop BFD needs bgp: a static next hop is directly connected"
// +kubebuilder:validation:XValidation:rule="!has(self.bgp) || !has(self.bgp.bfd) || !has(self.bgp.bfd.multihop) || !self.bgp.bfd.multihop || ((!isIP(self.address) || ip(self.address).family() == 4 || !ip(self.address).isLinkLocalUnicast()) && (!has(self.bgp.bfd.localAddress) || !isIP(self.bgp.bfd.localAddress) || ip(self.bgp.bfd.localAddress).family() == 4 || !ip(self.bgp.bfd.localAddress).isLinkLocalUnicast()))",message="multihop BFD needs addresses that are not IPv6 link-local"
// +kubebuilder:validation:XValidation:rule="!has(self.bgp) || !has(self.bgp.bfd) || !has(self.bgp.bfd.localAddress) || !isIP(self.address) || !isIP(self.bgp.bfd.localAddress) || ip(self.bgp.bfd.localAddress).family() == ip(self.address).family()",message="bfd.localAddress must be of the address family of address"
// +kubebuilder:validation:XValidation:rule="!has(self.static) || !has(self.static.bfd) || !has(self.static.bfd.localAddress) || !isIP(self.address) || !isIP(self.static.bfd.localAddress) || ip(self.static.bfd.localAddress).family() == ip(self.address).family()",message="bfd.localAddress must be of the address family of address"
// +kubebuilder:validation:XValidation:rule="!has(self.bgp) || !has(self.bgp.passwordSecretRef) || !isIP(self.address) || ip(self.address).family() == 4 || !ip(self.address).isLinkLocalUnicast()",message="bgp.passwordSecretRef needs an address that is not IPv6 link-local (GoBGP cannot key a TCP MD5 password to a link-local neighbour)"
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

// BGPSpec holds the BGP session parameters and the path attributes of the
// VIPs announced to the gateway.
//
// +kubebuilder:validation:XValidation:rule="!has(self.ttlSecurity) || self.localASN != self.remoteASN",message="ttlSecurity is for eBGP sessions only (localASN different from remoteASN)"
// +kubebuilder:validation:XValidation:rule="!has(self.localPreference) || self.localASN == self.remoteASN",message="localPreference is sent over iBGP sessions only (localASN equal to remoteASN)"
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

	// PasswordSecretRef names the key of a Secret, in the GatewayRouter's
	// namespace, that holds the TCP MD5 password of the session (RFC 2385),
	// 1..80 bytes. The gateway must be configured with the same password.
	// Not with an IPv6 link-local address.
	//
	// +optional
	PasswordSecretRef *SecretKeyRef `json:"passwordSecretRef,omitempty"`

	// TTLSecurity turns on GTSM (RFC 5082) for an eBGP session: sllbrd
	// sends with TTL 255 and accepts only packets that arrive with a TTL of
	// at least 256 - hops, so a spoofed packet from farther away is
	// dropped by the kernel. The gateway must enable it too.
	//
	// +optional
	TTLSecurity *TTLSecuritySpec `json:"ttlSecurity,omitempty"`

	// Communities (RFC 1997) attached to every VIP announced to this
	// gateway, each "AS:value" with two numbers of 0..65535 (the well-known
	// NO_EXPORT is "65535:65281").
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	Communities []Community `json:"communities,omitempty"`

	// LargeCommunities (RFC 8092) attached to every VIP announced to this
	// gateway, each "global:local1:local2" with three numbers of
	// 0..4294967295.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	LargeCommunities []LargeCommunity `json:"largeCommunities,omitempty"`

	// LocalPreference is sent with every VIP announced to this gateway, so
	// that it prefers the Gateway with the highest value (without it,
	// sllbrd sends 100). iBGP only: eBGP does not carry it (RFC 4271
	// section 5.1.5). 1..4294967295: the embedded GoBGP cannot send 0.
	//
	// +optional
	// +kubebuilder:validation:Format=""
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967295
	LocalPreference *uint32 `json:"localPreference,omitempty"`
}

// SecretKeyRef names one key of a Secret in the referring object's
// namespace.
type SecretKeyRef struct {
	// Name is the Secret's name.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Key is the key in the Secret's data.
	//
	// +optional
	// +kubebuilder:default=password
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// TTLSecuritySpec holds the GTSM (RFC 5082) parameters.
type TTLSecuritySpec struct {
	// Hops is how many hops away the gateway may be: 1 (directly
	// connected, the default) accepts only TTL 255; n accepts TTL 256-n and
	// above. With more than one hop the session is also a multihop eBGP
	// session, since its packets leave with TTL 255.
	//
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=254
	Hops int32 `json:"hops,omitempty"`
}

// Community is a BGP community, "AS:value" (0..65535 each).
//
// +kubebuilder:validation:MaxLength=11
// +kubebuilder:validation:Pattern=`^[0-9]{1,5}:[0-9]{1,5}$`
// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9]{1,5}:[0-9]{1,5}$') || self.split(':').all(n, int(n) <= 65535)",message="must be AS:value with numbers in 0..65535"
type Community string

// LargeCommunity is a BGP large community, "global:local1:local2"
// (0..4294967295 each).
//
// +kubebuilder:validation:MaxLength=32
// +kubebuilder:validation:Pattern=`^[0-9]{1,10}:[0-9]{1,10}:[0-9]{1,10}$`
// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9]{1,10}:[0-9]{1,10}:[0-9]{1,10}$') || self.split(':').all(n, int(n) <= 4294967295)",message="must be global:local1:local2 with numbers in 0..4294967295"
type LargeCommunity string

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
