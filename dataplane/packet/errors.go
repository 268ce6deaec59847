package packet

import "errors"

// The reasons Decode gives for KindInvalid. Packet.Err is always exactly one
// of these values (compare with ==), so callers can count drops per reason.
var (
	// ErrTruncated: the buffer (or the length the IP header states) ends
	// before a header Decode needs, or before the bytes that hold the ports.
	ErrTruncated = errors.New("packet: truncated")
	// ErrBadVersion: the IP version is neither 4 nor 6, or the packet
	// embedded in an ICMP error is not of the same version as the ICMP packet.
	ErrBadVersion = errors.New("packet: bad IP version")
	// ErrBadHeaderLength: an IPv4 header length (IHL) below 5 words.
	ErrBadHeaderLength = errors.New("packet: bad IPv4 header length")
	// ErrBadTotalLength: an IPv4 total length smaller than its own header.
	ErrBadTotalLength = errors.New("packet: bad IPv4 total length")
	// ErrBadPayloadLength: an IPv6 Jumbo Payload option that is misaligned,
	// not 4 bytes long or states a length below 65536 (RFC 2675 section 3).
	ErrBadPayloadLength = errors.New("packet: bad IPv6 jumbo payload length")
	// ErrTooManyExtensionHeaders: an IPv6 header chain longer than
	// MaxExtensionHeaders.
	ErrTooManyExtensionHeaders = errors.New("packet: too many IPv6 extension headers")
	// ErrBadFragment: an IPv6 header chain with more than one fragment header.
	ErrBadFragment = errors.New("packet: bad IPv6 fragment header chain")
)

// Errors returns every error Decode can set, for registering one counter
// per reason up front. The caller owns the returned slice.
func Errors() []error {
	return []error{
		ErrTruncated,
		ErrBadVersion,
		ErrBadHeaderLength,
		ErrBadTotalLength,
		ErrBadPayloadLength,
		ErrTooManyExtensionHeaders,
		ErrBadFragment,
	}
}
