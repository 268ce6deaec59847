package dataplane

// Verdict is what the kernel is told to do with a packet.
type Verdict uint8

const (
	// Drop the packet.
	Drop Verdict = iota
	// Accept the packet with Decision.Mark set: policy routing sends it to
	// the chosen endpoint.
	Accept
	// Hold the packet: it is a later fragment whose first fragment has not
	// been seen. The caller keeps it queued (no verdict yet) under the token
	// it passed; a later Decision lists the token in Release (same verdict as
	// that decision) or the engine's Expire lists it for dropping.
	Hold
)

func (v Verdict) String() string {
	switch v {
	case Drop:
		return "drop"
	case Accept:
		return "accept"
	case Hold:
		return "hold"
	}
	return "unknown"
}

// Reason says why a packet got its verdict. Every decision has exactly one.
type Reason uint8

const (
	// ReasonBalanced: matched a route and was sent to an endpoint.
	ReasonBalanced Reason = iota
	// ReasonFragmentFollowed: a later fragment sent where its first fragment went.
	ReasonFragmentFollowed
	// ReasonFragmentHeld: a later fragment held until its first fragment arrives.
	ReasonFragmentHeld
	// ReasonFragmentUnknown: a later fragment whose first fragment was not
	// seen and could not be held (the datagram holds too many already).
	ReasonFragmentUnknown
	// ReasonFragmentHoldLimit: a later fragment whose first fragment was not
	// seen, dropped because its queue already holds as many packets as it
	// may (HoldLimit): held packets must not fill the kernel queue.
	ReasonFragmentHoldLimit
	// ReasonNoRoute: no L34Route matches the packet.
	ReasonNoRoute
	// ReasonNoEndpoint: the route's Service has no ready endpoint (or does not exist).
	ReasonNoEndpoint
	// ReasonUndecodable: the packet is truncated or malformed.
	ReasonUndecodable
	// ReasonUnsupported: well-formed but not something sllbrd balances (for
	// example an ICMP type other than echo and errors).
	ReasonUnsupported
	// ReasonNotConfigured: no configuration has been loaded yet.
	ReasonNotConfigured

	numReasons
)

var reasonNames = [numReasons]string{
	ReasonBalanced:          "balanced",
	ReasonFragmentFollowed:  "fragment_followed",
	ReasonFragmentHeld:      "fragment_held",
	ReasonFragmentUnknown:   "fragment_unknown",
	ReasonFragmentHoldLimit: "fragment_hold_limit",
	ReasonNoRoute:           "no_route",
	ReasonNoEndpoint:        "no_endpoint",
	ReasonUndecodable:       "undecodable",
	ReasonUnsupported:       "unsupported",
	ReasonNotConfigured:     "not_configured",
}

// String returns the reason as used in metric labels.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Reasons lists every reason, for exporting counters.
func Reasons() []Reason {
	out := make([]Reason, numReasons)
	for i := range out {
		out[i] = Reason(i)
	}
	return out
}
