package bpfpath

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The netdev generic netlink family (include/uapi/linux/netdev.h, kernel
// 6.3+), which reports what XDP each interface supports.
const (
	genlCtrlCmdGetFamily  = 3 // CTRL_CMD_GETFAMILY
	genlCtrlAttrFamilyID  = 1 // CTRL_ATTR_FAMILY_ID
	genlCtrlAttrFamilyNam = 2 // CTRL_ATTR_FAMILY_NAME
	netdevCmdDevGet       = 1 // NETDEV_CMD_DEV_GET
	netdevAttrIfindex     = 1 // NETDEV_A_DEV_IFINDEX
	netdevAttrXDPFeatures = 3 // NETDEV_A_DEV_XDP_FEATURES
	netdevXDPActNdoXmit   = 4 // NETDEV_XDP_ACT_NDO_XMIT
)

// xdpTargets reports which of the interfaces (by index, in the calling
// thread's network namespace) take frames that another interface's
// driver-mode XDP program redirects to them: those whose XDP features
// include NETDEV_XDP_ACT_NDO_XMIT (the driver's ndo_xdp_xmit works now).
// A driver-mode redirect to another interface is dropped. An interface it
// cannot ask about (a kernel before 6.3, no such interface) is not one;
// the error says why when it could ask about none.
func xdpTargets(ifindexes []int) (map[int]bool, error) {
	out := map[int]bool{}
	if len(ifindexes) == 0 {
		return out, nil
	}
	c, err := netlink.Dial(unix.NETLINK_GENERIC, nil)
	if err != nil {
		return out, fmt.Errorf("bpfpath: generic netlink: %w", err)
	}
	defer c.Close()
	family, err := genlFamily(c, "netdev")
	if err != nil {
		return out, fmt.Errorf("bpfpath: the netdev netlink family (kernel 6.3+), for interfaces' XDP features: %w", err)
	}
	var errs []error
	for _, ifindex := range ifindexes {
		f, err := xdpFeatures(c, family, ifindex)
		if err != nil {
			errs = append(errs, fmt.Errorf("interface %d: %w", ifindex, err))
			continue
		}
		out[ifindex] = f&netdevXDPActNdoXmit != 0
	}
	if len(errs) == len(ifindexes) {
		return out, fmt.Errorf("bpfpath: XDP features: %w", errors.Join(errs...))
	}
	return out, nil
}

// genlRequest sends a generic netlink request (cmd, attributes) to family
// and returns the replies' attributes.
func genlRequest(c *netlink.Conn, family uint16, cmd, version uint8, attrs *netlink.AttributeEncoder) ([][]byte, error) {
	b, err := attrs.Encode()
	if err != nil {
		return nil, err
	}
	msgs, err := c.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(family), Flags: netlink.Request},
		Data:   append([]byte{cmd, version, 0, 0}, b...),
	})
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, m := range msgs {
		if len(m.Data) < 4 {
			return nil, fmt.Errorf("a generic netlink reply of %d bytes", len(m.Data))
		}
		out = append(out, m.Data[4:])
	}
	return out, nil
}

// genlAttr returns the first attribute of type typ in replies.
func genlAttr(replies [][]byte, typ uint16) ([]byte, error) {
	for _, r := range replies {
		ad, err := netlink.NewAttributeDecoder(r)
		if err != nil {
			return nil, err
		}
		for ad.Next() {
			if ad.Type() == typ {
				return ad.Bytes(), nil
			}
		}
	}
	return nil, fmt.Errorf("no attribute %d in the reply", typ)
}

// genlFamily resolves a generic netlink family's name to its id.
func genlFamily(c *netlink.Conn, name string) (uint16, error) {
	ae := netlink.NewAttributeEncoder()
	ae.String(genlCtrlAttrFamilyNam, name)
	replies, err := genlRequest(c, unix.GENL_ID_CTRL, genlCtrlCmdGetFamily, 1, ae)
	if err != nil {
		return 0, err
	}
	b, err := genlAttr(replies, genlCtrlAttrFamilyID)
	if err != nil || len(b) != 2 {
		return 0, fmt.Errorf("family %q: an id of %d bytes: %w", name, len(b), err)
	}
	return binary.NativeEndian.Uint16(b), nil
}

// xdpFeatures returns an interface's NETDEV_XDP_ACT_* bits.
func xdpFeatures(c *netlink.Conn, family uint16, ifindex int) (uint64, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(netdevAttrIfindex, uint32(ifindex))
	replies, err := genlRequest(c, family, netdevCmdDevGet, 1, ae)
	if err != nil {
		return 0, err
	}
	b, err := genlAttr(replies, netdevAttrXDPFeatures)
	if err != nil || len(b) != 8 {
		return 0, fmt.Errorf("XDP features of %d bytes: %w", len(b), err)
	}
	return binary.NativeEndian.Uint64(b), nil
}
