package admin

import (
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Protocols lists the protocols explain builds packets for.
var Protocols = []string{"tcp", "udp", "sctp", "icmp", "icmpv6"}

// MaxPayloadBytes bounds Flow.Payload (the dataplane's MaxProbePayload).
const MaxPayloadBytes = 1024

// Flow is the synthetic packet explain decides: the first packet of a flow
// (TCP SYN, UDP datagram, SCTP INIT, ICMP/ICMPv6 echo request).
type Flow struct {
	Protocol    string     `json:"protocol"`
	Source      netip.Addr `json:"source"`
	SourcePort  uint16     `json:"sourcePort"` // icmp, icmpv6: the echo identifier
	Destination netip.Addr `json:"destination"`
	// DestinationPort must be 0 for icmp and icmpv6.
	DestinationPort uint16 `json:"destinationPort"`
	// Payload follows the transport header (byte matches may read it).
	Payload HexBytes `json:"payload,omitempty"`
}

// HexBytes is a byte string written in JSON as hexadecimal.
type HexBytes []byte

// MarshalText implements encoding.TextMarshaler.
func (h HexBytes) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(h)), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (h *HexBytes) UnmarshalText(b []byte) error {
	out, err := hex.DecodeString(string(b))
	if err != nil {
		return fmt.Errorf("payload: not hexadecimal: %w", err)
	}
	*h = out
	return nil
}

// ParseFlow reads `<proto> <src>[:port] <dst>[:port]` (IPv6 with a port
// in brackets: [2001:db8::1]:80).
func ParseFlow(args []string) (Flow, error) {
	if len(args) != 3 {
		return Flow{}, fmt.Errorf("want <protocol> <source>[:port] <destination>[:port], got %d arguments", len(args))
	}
	src, err := parseEnd(args[1])
	if err != nil {
		return Flow{}, fmt.Errorf("source: %w", err)
	}
	dst, err := parseEnd(args[2])
	if err != nil {
		return Flow{}, fmt.Errorf("destination: %w", err)
	}
	f := Flow{Protocol: strings.ToLower(args[0]), Source: src.Addr(), SourcePort: src.Port(),
		Destination: dst.Addr(), DestinationPort: dst.Port()}
	return f, f.Validate()
}

// parseEnd reads an address with an optional port.
func parseEnd(s string) (netip.AddrPort, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.AddrPortFrom(a, 0), nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: want an address, address:port or [IPv6 address]:port", s)
	}
	return ap, nil
}

// Validate checks what the socket may carry: a known protocol, two
// addresses, a bounded payload. The dataplane checks the rest (families,
// ports of an echo) and says what is wrong.
func (f *Flow) Validate() error {
	var errs []error
	if !slices.Contains(Protocols, f.Protocol) {
		errs = append(errs, fmt.Errorf("protocol %q: want one of %s", f.Protocol, strings.Join(Protocols, ", ")))
	}
	if !f.Source.IsValid() || !f.Destination.IsValid() {
		errs = append(errs, errors.New("source and destination addresses are required"))
	}
	if f.Source.Zone() != "" || f.Destination.Zone() != "" {
		errs = append(errs, errors.New("addresses must not have a zone"))
	}
	if len(f.Payload) > MaxPayloadBytes {
		errs = append(errs, fmt.Errorf("payload of %d bytes: at most %d", len(f.Payload), MaxPayloadBytes))
	}
	return errors.Join(errs...)
}

// String writes the flow as ParseFlow reads it.
func (f Flow) String() string {
	end := func(a netip.Addr, port uint16) string {
		if port == 0 {
			return a.String()
		}
		return netip.AddrPortFrom(a, port).String()
	}
	s := f.Protocol + " " + end(f.Source, f.SourcePort) + " " + end(f.Destination, f.DestinationPort)
	if len(f.Payload) > 0 {
		s += " payload " + strconv.Itoa(len(f.Payload)) + " bytes"
	}
	return s
}

// ParseLevel reads a log level as --log-level does: debug, info, warn or
// error, optionally with an offset (info+2).
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("log level %q: want debug, info, warn or error", s)
	}
	return l, nil
}
