package bfd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// UDP ports of RFC 5881 section 4 and RFC 5883 section 2, and the source
// port range of RFC 5881 section 4 ("MUST be in the range 49152 through
// 65535").
const (
	PortSingleHop   = 3784
	PortMultihop    = 4784
	srcPortMin      = 49152
	srcPortMax      = 65535
	ttlMax          = 255
	srcPortAttempts = 64
)

// controlFunc returns a net.ListenConfig Control function that binds the
// socket to ifname (when set), sets the TTL / hop limit of sent packets to
// 255 and enables the ancillary data the receive path needs.
func controlFunc(ifname string, listen bool) func(network, address string, c syscall.RawConn) error {
	return func(network, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = setSockopts(int(fd), network == "udp6", ifname, listen)
		})
		if err != nil {
			return fmt.Errorf("bfd: raw socket control: %w", err)
		}
		return serr
	}
}

func setSockopts(fd int, v6 bool, ifname string, listen bool) error {
	type opt struct{ level, name, value int }
	opts := []opt{{unix.IPPROTO_IP, unix.IP_TTL, ttlMax}}
	if listen {
		opts = append(opts, opt{unix.SOL_SOCKET, unix.SO_REUSEADDR, 1},
			opt{unix.IPPROTO_IP, unix.IP_RECVTTL, 1},
			opt{unix.IPPROTO_IP, unix.IP_PKTINFO, 1})
	}
	if v6 {
		opts = []opt{{unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS, ttlMax}}
		if listen {
			opts = append(opts, opt{unix.SOL_SOCKET, unix.SO_REUSEADDR, 1},
				opt{unix.IPPROTO_IPV6, unix.IPV6_RECVHOPLIMIT, 1},
				opt{unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1})
		}
	}
	for _, o := range opts {
		if err := unix.SetsockoptInt(fd, o.level, o.name, o.value); err != nil {
			return fmt.Errorf("bfd: setsockopt(%d, %d): %w", o.level, o.name, err)
		}
	}
	if ifname != "" {
		if err := unix.BindToDevice(fd, ifname); err != nil {
			return fmt.Errorf("bfd: SO_BINDTODEVICE %q: %w", ifname, err)
		}
	}
	return nil
}

func udpNetwork(v6 bool) string {
	if v6 {
		return "udp6"
	}
	return "udp4"
}

// listen opens the wildcard receive socket of one family on port.
func listen(ctx context.Context, v6 bool, port uint16) (*net.UDPConn, error) {
	lc := net.ListenConfig{Control: controlFunc("", true)}
	addr := netip.AddrPortFrom(netip.IPv4Unspecified(), port)
	if v6 {
		addr = netip.AddrPortFrom(netip.IPv6Unspecified(), port)
	}
	pc, err := lc.ListenPacket(ctx, udpNetwork(v6), addr.String())
	if err != nil {
		return nil, fmt.Errorf("bfd: listen %v: %w", addr, err)
	}
	return pc.(*net.UDPConn), nil
}

// openSender opens the transmit socket of a session: bound to cfg.Local (or
// the wildcard) and a source port chosen at random from 49152-65535 once for
// the session's lifetime, to cfg.Interface with SO_BINDTODEVICE, TTL 255.
func openSender(ctx context.Context, cfg SessionConfig, rng *rand.Rand) (*net.UDPConn, error) {
	v6 := cfg.Peer.Is6()
	local := cfg.Local
	if !local.IsValid() {
		local = netip.IPv4Unspecified()
		if v6 {
			local = netip.IPv6Unspecified()
		}
	}
	host := local.String()
	if local.Is6() && local.IsLinkLocalUnicast() && cfg.Interface != "" {
		host += "%" + cfg.Interface
	}
	lc := net.ListenConfig{Control: controlFunc(cfg.Interface, false)}
	var lastErr error
	for range srcPortAttempts {
		port := srcPortMin + rng.IntN(srcPortMax-srcPortMin+1)
		pc, err := lc.ListenPacket(ctx, udpNetwork(v6), net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			return pc.(*net.UDPConn), nil
		}
		lastErr = err
		if !errors.Is(err, unix.EADDRINUSE) {
			break
		}
	}
	return nil, fmt.Errorf("bfd: open sender for %v: %w", cfg.Key(), lastErr)
}

// ancillary is what the receive path needs from a datagram's control data.
type ancillary struct {
	ttl     int // received TTL / hop limit; -1 when absent
	ifindex int // arrival interface; 0 when absent
}

// parseAncillary extracts TTL/hop limit and arrival interface from oob
// without allocating (unix.ParseSocketControlMessage allocates).
func parseAncillary(oob []byte) ancillary {
	a := ancillary{ttl: -1}
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if h.Len < unix.SizeofCmsghdr || uint64(h.Len) > uint64(len(oob)) {
			break
		}
		data := oob[unix.CmsgLen(0):h.Len]
		switch {
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_TTL && len(data) >= 4,
			h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_HOPLIMIT && len(data) >= 4:
			a.ttl = int(int32(binary.NativeEndian.Uint32(data)))
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_PKTINFO && len(data) >= unix.SizeofInet4Pktinfo:
			a.ifindex = int(int32(binary.NativeEndian.Uint32(data)))
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_PKTINFO && len(data) >= unix.SizeofInet6Pktinfo:
			a.ifindex = int(binary.NativeEndian.Uint32(data[16:]))
		}
		space := unix.CmsgSpace(int(h.Len) - unix.CmsgLen(0))
		if space > len(oob) {
			break
		}
		oob = oob[space:]
	}
	return a
}
