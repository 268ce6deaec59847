package bfd

import "strconv"

// State is a BFD session state, with its wire encoding (RFC 5880 section 4.1).
type State uint8

// Session states (RFC 5880 section 4.1, "Sta").
const (
	StateAdminDown State = 0
	StateDown      State = 1
	StateInit      State = 2
	StateUp        State = 3
)

var stateNames = [...]string{"AdminDown", "Down", "Init", "Up"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Diag is a BFD diagnostic code (RFC 5880 section 4.1, "Diag").
type Diag uint8

// Diagnostic codes (RFC 5880 section 4.1).
const (
	DiagNone                  Diag = 0
	DiagControlDetectExpired  Diag = 1
	DiagEchoFailed            Diag = 2
	DiagNeighborSignaledDown  Diag = 3
	DiagForwardingPlaneReset  Diag = 4
	DiagPathDown              Diag = 5
	DiagConcatenatedPathDown  Diag = 6
	DiagAdministrativelyDown  Diag = 7
	DiagReverseConcatPathDown Diag = 8
)

var diagNames = [...]string{
	"No Diagnostic",
	"Control Detection Time Expired",
	"Echo Function Failed",
	"Neighbor Signaled Session Down",
	"Forwarding Plane Reset",
	"Path Down",
	"Concatenated Path Down",
	"Administratively Down",
	"Reverse Concatenated Path Down",
}

func (d Diag) String() string {
	if int(d) < len(diagNames) {
		return diagNames[d]
	}
	return "Diag(" + strconv.Itoa(int(d)) + ")"
}

// DiscardReason says why a received packet was discarded. It implements
// error so that Unmarshal can return it without allocating.
type DiscardReason uint8

// Discard reasons. The first group is detected by Packet.Unmarshal, the second
// by the Server and Session.
const (
	discardNone DiscardReason = iota
	DiscardBadVersion
	DiscardBadLength
	DiscardTruncated
	DiscardZeroDetectMult
	DiscardMultipoint
	DiscardZeroMyDiscriminator
	DiscardZeroYourDiscriminator
	DiscardAuthNotSupported
	DiscardNoSession
	DiscardAddressMismatch
	DiscardBadTTL
	DiscardLocalAdminDown
	NumDiscardReasons // number of reasons, for sizing counter arrays
)

var discardNames = [...]string{
	"none",
	"bad_version",
	"bad_length",
	"truncated",
	"zero_detect_mult",
	"multipoint",
	"zero_my_discriminator",
	"zero_your_discriminator",
	"auth_not_supported",
	"no_session",
	"address_mismatch",
	"bad_ttl",
	"local_admin_down",
}

// String returns a short snake_case name usable as a metric label.
func (r DiscardReason) String() string {
	if int(r) < len(discardNames) {
		return discardNames[r]
	}
	return "discard(" + strconv.Itoa(int(r)) + ")"
}

// Error implements error.
func (r DiscardReason) Error() string { return "bfd: packet discarded: " + r.String() }

// DiscardCounts counts discarded packets per DiscardReason.
type DiscardCounts [NumDiscardReasons]uint64

// Total returns the sum over all reasons.
func (c *DiscardCounts) Total() uint64 {
	var t uint64
	for _, n := range c {
		t += n
	}
	return t
}
