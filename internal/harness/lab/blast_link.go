package lab

import (
	"encoding/binary"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// The blast from the gateway (BlastOptions.FromGateway): whole Ethernet
// frames through a packet socket that bypasses the qdisc, so that the
// sender's cost per packet is a copy into an skb and the veth's transmit,
// with no routing, no neighbour lookup and no gateway forwarding on the
// way to lb1.

// frameLink is where the gateway's frames go: its GatewayLink's index and
// MAC, and lb1's MAC on the same link.
type frameLink struct {
	ifindex  int
	src, dst net.HardwareAddr
}

// gatewayToLB1 reads the gateway's and lb1's GatewayLink.
func (l *Lab) gatewayToLB1() (frameLink, error) {
	var fl frameLink
	err := l.Do(GatewayNode, func() error {
		ifc, err := net.InterfaceByName(GatewayLink)
		if err != nil {
			return err
		}
		fl.ifindex, fl.src = ifc.Index, ifc.HardwareAddr
		return nil
	})
	if err != nil {
		return fl, fmt.Errorf("blast from the gateway: %w", err)
	}
	err = l.Do(LBName(1), func() error {
		ifc, err := net.InterfaceByName(GatewayLink)
		if err != nil {
			return err
		}
		fl.dst = ifc.HardwareAddr
		return nil
	})
	if err != nil {
		return fl, fmt.Errorf("blast from the gateway: lb1: %w", err)
	}
	return fl, nil
}

// frame is the IP packet p in an Ethernet header from the gateway to lb1.
func (fl frameLink) frame(p []byte) []byte {
	f := make([]byte, 14+len(p))
	copy(f[0:6], fl.dst)
	copy(f[6:12], fl.src)
	typ := uint16(unix.ETH_P_IPV6)
	if len(p) > 0 && p[0]>>4 == 4 {
		typ = unix.ETH_P_IP
	}
	binary.BigEndian.PutUint16(f[12:14], typ)
	copy(f[14:], p)
	return f
}

// packetSocket opens a packet socket that sends whole frames out of the
// interface ifindex, past its qdisc, and receives nothing (protocol 0).
func packetSocket(ifindex int) (int, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("packet socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("packet socket: PACKET_QDISC_BYPASS: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("packet socket: bind to interface %d: %w", ifindex, err)
	}
	return fd, nil
}
