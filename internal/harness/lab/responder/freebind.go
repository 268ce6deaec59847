package responder

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// listenConfig binds with IP_FREEBIND or IPV6_FREEBIND, socket options
// that need no capability and no sysctl: a socket can bind a VIP before
// the VIP is on an interface (in a pod, `sllbrd target` puts it on lo after
// the application started, and the pod may not set the unsafe sysctl
// ip_nonlocal_bind), and receives once it is.
var listenConfig = net.ListenConfig{Control: freebind}

func freebind(network, address string, rc syscall.RawConn) error {
	level, opt, name := unix.IPPROTO_IP, unix.IP_FREEBIND, "IP_FREEBIND"
	if strings.HasSuffix(network, "6") {
		level, opt, name = unix.IPPROTO_IPV6, unix.IPV6_FREEBIND, "IPV6_FREEBIND"
	}
	var err error
	if cerr := rc.Control(func(fd uintptr) { err = unix.SetsockoptInt(int(fd), level, opt, 1) }); cerr != nil {
		return fmt.Errorf("%s %s: %w", network, address, cerr)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %s: %w", network, address, name, err)
	}
	return nil
}

// family is the network of one address family ("udp4", "tcp6", ...), so
// that a socket is never dual-stack.
func family(proto string, a netip.Addr) string {
	if a.Is4() {
		return proto + "4"
	}
	return proto + "6"
}

func listenUDP(a netip.Addr, port uint16) (*net.UDPConn, error) {
	c, err := listenConfig.ListenPacket(context.Background(), family("udp", a), netip.AddrPortFrom(a, port).String())
	if err != nil {
		return nil, err
	}
	return c.(*net.UDPConn), nil
}

func listenTCP(a netip.Addr, port uint16) (*net.TCPListener, error) {
	l, err := listenConfig.Listen(context.Background(), family("tcp", a), netip.AddrPortFrom(a, port).String())
	if err != nil {
		return nil, err
	}
	return l.(*net.TCPListener), nil
}

// checkAddr refuses what is not one VIP: a wildcard would answer from
// whatever source the route picks, and an IPv4-mapped address would bind
// a dual-stack socket.
func checkAddr(a netip.Addr) error {
	switch {
	case !a.IsValid():
		return fmt.Errorf("invalid address")
	case a.IsUnspecified():
		return fmt.Errorf("address %s: a wildcard, want a VIP", a)
	case a.Is4In6():
		return fmt.Errorf("address %s: IPv4-mapped, want %s", a, a.Unmap())
	case a.IsMulticast():
		return fmt.Errorf("address %s: multicast, want a VIP", a)
	}
	return nil
}
