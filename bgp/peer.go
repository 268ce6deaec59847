package bgp

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/sllbrd/sllbrd/model"
)

// peerSpec is everything about one BGP GatewayRouter that shapes its GoBGP
// peer. It is comparable: two equal specs need no change to the peer.
type peerSpec struct {
	name       string
	addr       netip.Addr // neighbour address; IPv6 link-local carries its zone
	iface      string
	localASN   uint32
	remoteASN  uint32
	holdSecs   uint64
	localPort  uint16
	remotePort uint16
	localAddr  netip.Addr // bound when localPort is set; zero: wildcard
	password   model.Password
	ttlHops    uint8 // GTSM: 0 off
	bfd        bool
	attrs      exportAttrs // added to the VIPs sent to the peer
}

// key is the GoBGP neighbour address of the peer.
func (p peerSpec) key() string { return p.addr.String() }

// sessionSpec drops the fields that do not affect the GoBGP session (the
// export attributes are applied by policy and a soft reset).
func (p peerSpec) sessionSpec() peerSpec {
	p.name, p.bfd, p.attrs = "", false, exportAttrs{}
	return p
}

// peerSpecs selects the BGP routers and validates them. Invalid or duplicate
// routers are skipped and reported in the joined error.
func peerSpecs(routers []model.Router, globalASN uint32) (map[netip.Addr]peerSpec, error) {
	out := make(map[netip.Addr]peerSpec, len(routers))
	var errs []error
	for _, r := range routers {
		if r.BGP == nil {
			continue
		}
		s, err := newPeerSpec(r, globalASN)
		if err != nil {
			errs = append(errs, fmt.Errorf("gateway router %q: %w", r.Name, err))
			continue
		}
		if prev, dup := out[s.addr]; dup {
			errs = append(errs, fmt.Errorf("gateway router %q: address %s already used by %q", r.Name, s.addr, prev.name))
			continue
		}
		out[s.addr] = s
	}
	return out, errors.Join(errs...)
}

func newPeerSpec(r model.Router, globalASN uint32) (peerSpec, error) {
	addr := r.Address.Unmap()
	if !addr.IsValid() || addr.IsUnspecified() || addr.IsMulticast() {
		return peerSpec{}, fmt.Errorf("invalid neighbour address %q", r.Address)
	}
	if addr.Is6() && addr.IsLinkLocalUnicast() && addr.Zone() == "" {
		if r.Interface == "" {
			return peerSpec{}, fmt.Errorf("link-local neighbour %s needs an interface", addr)
		}
		addr = addr.WithZone(r.Interface)
	}
	if r.BGP.RemoteASN == 0 {
		return peerSpec{}, errors.New("remote ASN is 0")
	}
	if n := r.BGP.Password.Len(); n > model.MaxPasswordLength {
		return peerSpec{}, fmt.Errorf("the TCP MD5 password has %d bytes, at most %d are allowed", n, model.MaxPasswordLength)
	}
	if r.BGP.Password.IsSet() && addr.Zone() != "" {
		// GoBGP v3.37.0 keys the socket with net.ParseIP(address), which
		// fails on the zone and keys the unspecified address instead.
		return peerSpec{}, fmt.Errorf("a TCP MD5 password cannot be used with the link-local neighbour %s", addr)
	}
	local := r.BGP.LocalASN
	if local == 0 {
		local = globalASN
	}
	hold := r.BGP.HoldTime
	if hold == 0 {
		hold = DefaultHoldTime
	}
	return peerSpec{
		name:       r.Name,
		addr:       addr,
		iface:      r.Interface,
		localASN:   local,
		remoteASN:  r.BGP.RemoteASN,
		holdSecs:   wholeSeconds(hold, 3),
		localPort:  r.BGP.LocalPort,
		remotePort: r.BGP.RemotePort,
		password:   r.BGP.Password,
		ttlHops:    r.BGP.TTLSecurityHops,
		bfd:        r.BFD.Enabled,
		attrs:      newExportAttrs(r.BGP),
	}, nil
}

// peerPlan is what Apply does to GoBGP: delete, then add. A peer whose
// session parameters changed appears in both lists; one whose only change
// is its name, BFD flag or export attributes appears in neither (update
// only).
type peerPlan struct {
	remove []netip.Addr
	add    []netip.Addr
	update []netip.Addr
}

func diffPeers(have, want map[netip.Addr]peerSpec) peerPlan {
	var p peerPlan
	for a, h := range have {
		w, ok := want[a]
		switch {
		case !ok:
			p.remove = append(p.remove, a)
		case w.sessionSpec() != h.sessionSpec():
			p.remove = append(p.remove, a)
			p.add = append(p.add, a)
		case w != h:
			p.update = append(p.update, a)
		}
	}
	for a := range want {
		if _, ok := have[a]; !ok {
			p.add = append(p.add, a)
		}
	}
	for _, l := range [][]netip.Addr{p.remove, p.add, p.update} {
		slices.SortFunc(l, netip.Addr.Compare)
	}
	return p
}

// apiPeer builds the GoBGP peer for spec. adminDown creates it disabled.
func apiPeer(spec peerSpec, cfg config, adminDown bool) *api.Peer {
	fam := familyV4
	if spec.addr.Is6() {
		fam = familyV6
	}
	p := &api.Peer{
		Conf: &api.PeerConf{
			NeighborAddress: spec.key(),
			PeerAsn:         spec.remoteASN,
			LocalAsn:        spec.localASN,
			Description:     spec.name,
			AdminDown:       adminDown,
			// RFC 2385: GoBGP sets TCP_MD5SIG on the socket it dials
			// from; the kernel then signs every segment and drops those
			// without a valid signature.
			AuthPassword: spec.password.Reveal(),
		},
		Transport: &api.Transport{
			LocalAddress:  localAddress(spec),
			LocalPort:     uint32(spec.localPort),
			RemotePort:    uint32(spec.remotePort),
			BindInterface: spec.iface,
		},
		Timers: &api.Timers{Config: &api.TimersConfig{
			ConnectRetry:           wholeSeconds(cfg.connectRetry, 1),
			HoldTime:               spec.holdSecs,
			KeepaliveInterval:      max(spec.holdSecs/3, 1),
			IdleHoldTimeAfterReset: wholeSeconds(cfg.idleHold, 1),
		}},
		AfiSafis: []*api.AfiSafi{{Config: &api.AfiSafiConfig{Family: fam, Enabled: true}}},
	}
	if spec.ttlHops > 0 {
		// RFC 5082 section 3: send with TTL 255 (GoBGP does when enabled)
		// and discard packets received with a TTL below 255 - (hops - 1)
		// (IP_MINTTL, IPV6_MINHOPCOUNT).
		p.TtlSecurity = &api.TtlSecurity{Enabled: true, TtlMin: 256 - uint32(spec.ttlHops)}
	}
	return p
}

// localAddress is the transport local address: empty (GoBGP's wildcard
// default) unless a local port is bound and our address is known.
func localAddress(spec peerSpec) string {
	if spec.localPort == 0 || !spec.localAddr.IsValid() {
		return ""
	}
	return spec.localAddr.String()
}

var (
	familyV4 = &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}
	familyV6 = &api.Family{Afi: api.Family_AFI_IP6, Safi: api.Family_SAFI_UNICAST}
)
