package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// CIDR is an IPv4 or IPv6 prefix in CIDR notation, e.g. 10.0.0.0/8.
//
// +kubebuilder:validation:MaxLength=43
// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="must be a CIDR such as 10.0.0.0/8 or 2001:db8::/32"
type CIDR string

// PortRange is a single port ("4000"), an inclusive range ("4000-4010") of
// ports, each 0..65535 with the first not above the last, or "any" (the same
// as "0-65535").
//
// +kubebuilder:validation:MaxLength=11
// +kubebuilder:validation:Pattern=`^([0-9]{1,5}(-[0-9]{1,5})?|any)$`
// +kubebuilder:validation:XValidation:rule="self == 'any' || self.split('-').all(p, int(p) <= 65535)",message="ports must be in 0..65535"
// +kubebuilder:validation:XValidation:rule="self == 'any' || int(self.split('-')[0]) <= int(self.split('-')[size(self.split('-')) - 1])",message="a range must not end before it starts"
type PortRange string

// Protocol is a transport protocol an L34Route matches.
//
// +kubebuilder:validation:Enum=TCP;UDP;SCTP
type Protocol string

// The protocols an L34Route can match.
const (
	ProtocolTCP  Protocol = "TCP"
	ProtocolUDP  Protocol = "UDP"
	ProtocolSCTP Protocol = "SCTP"
)

// ByteMatch compares bytes of the transport header, NFQLB style:
// "proto[offset:size] = value" or "proto[offset:size] & mask = value", where
// proto is tcp, udp or sctp, size is 1, 2 or 4 (":size" may be left out for
// 1), and mask and value are decimal or 0x-prefixed hexadecimal, e.g.
// "tcp[13:1] & 0x02 = 0x02". The translator also rejects a value with bits
// outside the mask and numbers wider than size (model.ParseByteMatch).
//
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:Pattern=`^(tcp|udp|sctp)\[ *[0-9]{1,5} *(: *[124] *)?\]( *& *(0x[0-9a-fA-F]{1,8}|[0-9]{1,10}))? *==? *(0x[0-9a-fA-F]{1,8}|[0-9]{1,10})$`
type ByteMatch string

// L34RouteSpec says which packets a Gateway steers to which Service.
type L34RouteSpec struct {
	// ParentRefs names the one Gateway that handles this route.
	//
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1
	// +kubebuilder:validation:XValidation:rule="self.all(p, (!has(p.group) || p.group == 'gateway.networking.k8s.io') && (!has(p.kind) || p.kind == 'Gateway'))",message="the parent must be a gateway.networking.k8s.io Gateway"
	ParentRefs []gatewayv1.ParentReference `json:"parentRefs"`

	// BackendRefs names the one Service, in the route's namespace, that
	// receives the matching packets. Its port must be set and is ignored.
	//
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1
	// +kubebuilder:validation:XValidation:rule="self.all(b, (!has(b.group) || b.group == '') && (!has(b.kind) || b.kind == 'Service'))",message="the backend must be a core Service"
	BackendRefs []gatewayv1.BackendRef `json:"backendRefs"`

	// Priority orders overlapping routes of a Gateway: when several match a
	// packet, the highest priority wins.
	//
	// +required
	// +kubebuilder:validation:Minimum=1
	Priority int32 `json:"priority"`

	// DestinationCIDRs are the VIPs of the route: IPv4 /32 or IPv6 /128
	// only, of unicast addresses other hosts can reach. The rules below are
	// those of model/vip (vip.Reserved), which the translator and the
	// target side apply: keep them the same.
	//
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:XValidation:rule="!isCIDR(self) || cidr(self).prefixLength() == (cidr(self).ip().family() == 4 ? 32 : 128)",message="destination CIDRs must be IPv4 /32 or IPv6 /128"
	// +kubebuilder:validation:items:XValidation:rule="!isCIDR(self) || !(cidr('0.0.0.0/8').containsCIDR(self) || cidr('::/128').containsCIDR(self))",message="must not be an unspecified address (0.0.0.0/8, ::): a VIP must be a unicast address other hosts can reach",messageExpression="self + ' is an unspecified address (0.0.0.0/8, ::): a VIP must be a unicast address other hosts can reach'"
	// +kubebuilder:validation:items:XValidation:rule="!isCIDR(self) || !(cidr('127.0.0.0/8').containsCIDR(self) || cidr('::1/128').containsCIDR(self))",message="must not be a loopback address (127.0.0.0/8, ::1): a VIP must be a unicast address other hosts can reach",messageExpression="self + ' is a loopback address (127.0.0.0/8, ::1): a VIP must be a unicast address other hosts can reach'"
	// +kubebuilder:validation:items:XValidation:rule="!isCIDR(self) || !(cidr('169.254.0.0/16').containsCIDR(self) || cidr('fe80::/10').containsCIDR(self))",message="must not be a link-local address (169.254.0.0/16, fe80::/10): a VIP must be a unicast address other hosts can reach",messageExpression="self + ' is a link-local address (169.254.0.0/16, fe80::/10): a VIP must be a unicast address other hosts can reach'"
	// +kubebuilder:validation:items:XValidation:rule="!isCIDR(self) || !(cidr('224.0.0.0/4').containsCIDR(self) || cidr('ff00::/8').containsCIDR(self))",message="must not be a multicast address (224.0.0.0/4, ff00::/8): a VIP must be a unicast address other hosts can reach",messageExpression="self + ' is a multicast address (224.0.0.0/4, ff00::/8): a VIP must be a unicast address other hosts can reach'"
	// +kubebuilder:validation:items:XValidation:rule="!isCIDR(self) || !cidr('255.255.255.255/32').containsCIDR(self)",message="must not be a broadcast address (255.255.255.255): a VIP must be a unicast address other hosts can reach",messageExpression="self + ' is a broadcast address (255.255.255.255): a VIP must be a unicast address other hosts can reach'"
	DestinationCIDRs []CIDR `json:"destinationCIDRs"`

	// SourceCIDRs restricts the source addresses; empty means any.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=100
	SourceCIDRs []CIDR `json:"sourceCIDRs,omitempty"`

	// SourcePorts restricts the source ports; empty means any.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=100
	SourcePorts []PortRange `json:"sourcePorts,omitempty"`

	// DestinationPorts restricts the destination ports; empty means any.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=100
	DestinationPorts []PortRange `json:"destinationPorts,omitempty"`

	// Protocols are the transport protocols matched, each at most once.
	//
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	Protocols []Protocol `json:"protocols"`

	// ByteMatches must all hold for a packet to match.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=16
	ByteMatches []ByteMatch `json:"byteMatches,omitempty"`
}

// L34RouteStatus is the observed state of an L34Route.
type L34RouteStatus struct {
	// Parents has one entry per Gateway (parentRef) and controller that
	// handles the route, as the routes of the Gateway API report it
	// (RouteParentStatus): conditions Accepted and ResolvedRefs, written by
	// the controller named in controllerName. A controller writes and
	// removes only its own entries.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Parents []gatewayv1.RouteParentStatus `json:"parents,omitempty"`

	// Conditions describe the route as a whole; the controller of sllbrd
	// writes none (its findings are per parent, in parents).
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// L34Route steers Layer 3/4 traffic that reaches a Gateway to a Service.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type L34Route struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   L34RouteSpec   `json:"spec"`
	Status L34RouteStatus `json:"status,omitempty"`
}

// L34RouteList is a list of L34Routes.
//
// +kubebuilder:object:root=true
type L34RouteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []L34Route `json:"items"`
}
