package bpfpath

import "fmt"

// Status says what the program decided for a packet (bpf/result.h, enum
// status).
type Status uint32

// The statuses, from the C enum through bpf2go's generated constants.
const (
	StatusDecided           = Status(ingressStatusSTATUS_DECIDED)
	StatusPuntNotIP         = Status(ingressStatusSTATUS_PUNT_NOT_IP)
	StatusPuntMalformed     = Status(ingressStatusSTATUS_PUNT_MALFORMED)
	StatusPuntFragment      = Status(ingressStatusSTATUS_PUNT_FRAGMENT)
	StatusPuntIPv6Extension = Status(ingressStatusSTATUS_PUNT_IPV6EXTENSION)
	StatusPuntProtocol      = Status(ingressStatusSTATUS_PUNT_PROTOCOL)
	StatusPuntICMPError     = Status(ingressStatusSTATUS_PUNT_ICMP_ERROR)
	StatusPuntNoEndpoint    = Status(ingressStatusSTATUS_PUNT_NO_ENDPOINT)
	StatusPuntNonlinear     = Status(ingressStatusSTATUS_PUNT_NONLINEAR)
	StatusPuntNotVIP        = Status(ingressStatusSTATUS_PUNT_NOT_VIP)
	StatusPuntNoRoute       = Status(ingressStatusSTATUS_PUNT_NO_ROUTE)
	StatusPuntMappedSource  = Status(ingressStatusSTATUS_PUNT_MAPPED_SOURCE)
	StatusPuntUnexpressible = Status(ingressStatusSTATUS_PUNT_UNEXPRESSIBLE)
	StatusPuntLimit         = Status(ingressStatusSTATUS_PUNT_LIMIT)
)

// statusNames name the statuses. StatusPuntNoRoute and
// StatusPuntNoEndpoint are the userspace path's no_route and no_endpoint
// (dataplane.Reason): punted, userspace drops and counts them.
var statusNames = map[Status]string{
	StatusDecided:           "decided",
	StatusPuntNotIP:         "punt-not-ip",
	StatusPuntMalformed:     "punt-malformed",
	StatusPuntFragment:      "punt-fragment",
	StatusPuntIPv6Extension: "punt-ipv6-extension",
	StatusPuntProtocol:      "punt-protocol",
	StatusPuntICMPError:     "punt-icmp-error",
	StatusPuntNoEndpoint:    "punt-no-endpoint",
	StatusPuntNonlinear:     "punt-nonlinear",
	StatusPuntNotVIP:        "punt-not-vip",
	StatusPuntNoRoute:       "punt-no-route",
	StatusPuntMappedSource:  "punt-mapped-source",
	StatusPuntUnexpressible: "punt-unexpressible",
	StatusPuntLimit:         "punt-limit",
}

// String returns a short lower-case name, usable as a metric label.
func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("status-%d", uint32(s))
}

// NoRoute is Result.Route when the result names no route.
const NoRoute = -1

// Result is what the program reports for one packet (bpf/result.h).
type Result struct {
	Status Status
	// Route is the route's index in precedence order (fastpath.Input's
	// Routes, classify's indexes): the route matched (StatusDecided,
	// StatusPuntNoEndpoint) or the one the program stopped at
	// (StatusPuntUnexpressible, StatusPuntLimit); NoRoute otherwise.
	Route int
	// Hash is the flow hash (flowkey.Hash) and KeyLen the bytes of flow
	// key hashed; set when Status is StatusDecided, or
	// StatusPuntNoEndpoint when the route's Service exists.
	Hash, KeyLen uint32
	// Entry is maglev.ReciprocalScale(Hash, M), Slot the slot that owns it
	// (maglev.Table.Lookup32) and Mark that endpoint's fwmark; set when
	// Status is StatusDecided.
	Entry, Slot, Mark uint32
}

// skbContext is struct __sk_buff as BPF_PROG_TEST_RUN takes and returns it
// (include/uapi/linux/bpf.h): the program's result is in CB. It is longer
// than the kernel's struct (192 bytes in 6.18), which the kernel accepts
// when the excess is zero, and must be: the kernel refuses to copy out a
// context into a shorter buffer. Of the fields before CB, the kernel takes
// Mark, Priority, IngressIfindex and Ifindex in; after it, GSOSegs and
// GSOSize (and tstamp, wire_len, hwtstamp); the others must be zero.
type skbContext struct {
	Len, PktType, Mark, QueueMapping, Protocol, VlanPresent, VlanTCI, VlanProto, Priority uint32
	// IngressIfindex is the device the packet came in on: 0 (none) for
	// Explain, whose runs the program only reports (bpf/forward.h).
	IngressIfindex, Ifindex, TCIndex uint32
	CB                               [5]uint32
	_                                [24]uint32 // hash .. wire_len (offsets 68-163)
	// GSOSegs and GSOSize are the skb's (offsets 164 and 176): a GSO skb
	// has a GSOSize, the payload of each segment.
	GSOSegs uint32
	_       [2]uint32 // sk
	GSOSize uint32
	_       [19]uint32 // tstamp_type .. the end, and spare
}

// result decodes result.h's layout: cb[0] holds the status (bits 0-7),
// the key length (8-15) and the route (16-31, routeNone for none).
func (c *skbContext) result() Result {
	r := Result{Status: Status(c.CB[0] & 0xff), KeyLen: c.CB[0] >> 8 & 0xff, Route: int(c.CB[0] >> 16),
		Hash: c.CB[1], Entry: c.CB[2], Slot: c.CB[3], Mark: c.CB[4]}
	if r.Route == routeNone {
		r.Route = NoRoute
	}
	return r
}

// routeNone is bpf/result.h's ROUTE_NONE.
const routeNone = 0xffff
