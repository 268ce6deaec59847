package fastpath

import (
	"net/netip"

	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/model"
)

// Input is the state the kernel decides with.
type Input struct {
	// Routes are the valid routes, normalised as classify compiles them
	// (addresses unmapped, ports merged, nil when any), in precedence
	// order: index 0 wins over all others.
	Routes []model.Route
	// Services are the Services the routes lead to; a route whose Service
	// is missing is left to userspace.
	Services []Service
	// MaxPayloadOffset is the largest transport-header offset the kernel
	// accepts in a payload expression (0 means 255, what every kernel
	// accepts; 6.x kernels accept 65535). A route with a byte match beyond
	// it is left to userspace.
	MaxPayloadOffset int
}

// Service is one Service's Maglev tables and endpoints.
type Service struct {
	Name string
	// SCTPPortsOnly: SCTP flows are hashed on their ports only.
	SCTPPortsOnly bool
	// IPv4 and IPv6 are the Maglev tables of each family: the slot that
	// owns each entry 0..M-1 (maglev.Table.AppendEntrySlots); empty when
	// the family has no ready endpoint.
	IPv4, IPv6 []uint16
	// Endpoints are the Service's endpoint slots that have a mark.
	Endpoints []Endpoint
}

// Endpoint is one endpoint slot: its identifier, fwmark and its address in
// each family (invalid when it has none).
type Endpoint struct {
	ID         int
	Mark       uint32
	IPv4, IPv6 netip.Addr
}

func (s *Service) entries(fam family) []uint16 {
	if fam == v4 {
		return s.IPv4
	}
	return s.IPv6
}

// endpointMapSize is the size of s's endpoint map of fam: for its
// endpoints with an address of fam.
func (s *Service) endpointMapSize(fam family) uint32 {
	n := 0
	for i := range s.Endpoints {
		if s.Endpoints[i].addr(fam).IsValid() {
			n++
		}
	}
	return nft.MarkMapSize(n)
}

func (e *Endpoint) addr(fam family) netip.Addr {
	if fam == v4 {
		return e.IPv4
	}
	return e.IPv6
}

// family is 4 or 6.
type family uint8

const (
	v4 family = 4
	v6 family = 6
)

func familyOf(a netip.Addr) family {
	if a.Unmap().Is4() {
		return v4
	}
	return v6
}
