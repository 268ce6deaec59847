package responder

import (
	"fmt"
	"net/netip"
	"strings"
)

// Reply is what a responder answers: the target that served the flow, the
// client's address and port as the target saw them, and the protocol.
type Reply struct {
	Target string
	Client netip.AddrPort
	Proto  string // "udp" or "tcp"
}

// String formats r as the one-line wire form, ending in a newline.
func (r Reply) String() string {
	return fmt.Sprintf("target=%s client=%s proto=%s\n", r.Target, r.Client, r.Proto)
}

// ParseReply parses the wire form written by Reply.String.
func ParseReply(s string) (Reply, error) {
	var r Reply
	fields := strings.Fields(s)
	if len(fields) != 3 {
		return r, fmt.Errorf("reply %q: want 3 fields, got %d", s, len(fields))
	}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return r, fmt.Errorf("reply %q: field %q is not key=value", s, f)
		}
		switch k {
		case "target":
			r.Target = v
		case "client":
			ap, err := netip.ParseAddrPort(v)
			if err != nil {
				return r, fmt.Errorf("reply %q: client: %w", s, err)
			}
			r.Client = ap
		case "proto":
			r.Proto = v
		default:
			return r, fmt.Errorf("reply %q: unknown field %q", s, k)
		}
	}
	if r.Target == "" || !r.Client.IsValid() || r.Proto == "" {
		return r, fmt.Errorf("reply %q: missing field", s)
	}
	return r, nil
}
