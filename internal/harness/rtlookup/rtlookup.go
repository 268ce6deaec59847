package rtlookup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Query describes one packet: from Src to Dst (one family), arriving on
// the interface with index IIF (0: sent by the host itself), carrying
// firewall mark Mark (0: none).
type Query struct {
	Src, Dst netip.Addr
	IIF      uint32
	Mark     uint32
}

func (q Query) String() string {
	return fmt.Sprintf("%s -> %s iif %d mark %#x", q.Src, q.Dst, q.IIF, q.Mark)
}

// Answer is the route the kernel chose: its type (unix.RTN_*), the table
// it was found in and the gateway (invalid when the route has none).
type Answer struct {
	Type    uint8
	Table   uint32
	Gateway netip.Addr
}

func (a Answer) String() string {
	return fmt.Sprintf("type %d table %d gateway %v", a.Type, a.Table, a.Gateway)
}

// Via reports "" when the lookup found a unicast route through a gateway
// in table (one of gateways, when given), else what it found instead.
func Via(a Answer, err error, table uint32, gateways ...netip.Addr) string {
	if err != nil {
		return err.Error()
	}
	if a.Type != unix.RTN_UNICAST || a.Table != table || !a.Gateway.IsValid() {
		return fmt.Sprintf("%s, want a unicast route via a gateway in table %d", a, table)
	}
	if len(gateways) > 0 && !slices.Contains(gateways, a.Gateway) {
		return fmt.Sprintf("%s, want one of the gateways %v", a, gateways)
	}
	return ""
}

// Get asks the kernel, through c (a NETLINK_ROUTE socket), how q is routed.
// A packet the kernel would not route (a blackhole or unreachable route,
// no route at all) is an error, as for `ip route get`.
func Get(c *netlink.Conn, q Query) (Answer, error) {
	if !q.Src.IsValid() || !q.Dst.IsValid() || q.Src.Is4() != q.Dst.Is4() {
		return Answer{}, fmt.Errorf("query %s: source and destination must be addresses of one family", q)
	}
	rtm := make([]byte, unix.SizeofRtMsg)
	rtm[0], rtm[1], rtm[2] = unix.AF_INET6, uint8(q.Dst.BitLen()), uint8(q.Src.BitLen())
	if q.Dst.Is4() {
		rtm[0] = unix.AF_INET
	}
	// IPv4 reports the table the lookup used (not main) only when asked.
	binary.NativeEndian.PutUint32(rtm[8:], unix.RTM_F_LOOKUP_TABLE)
	attrs := []netlink.Attribute{{Type: unix.RTA_DST, Data: q.Dst.AsSlice()}, {Type: unix.RTA_SRC, Data: q.Src.AsSlice()}}
	if q.IIF != 0 {
		attrs = append(attrs, netlink.Attribute{Type: unix.RTA_IIF, Data: binary.NativeEndian.AppendUint32(nil, q.IIF)})
	}
	if q.Mark != 0 {
		attrs = append(attrs, netlink.Attribute{Type: unix.RTA_MARK, Data: binary.NativeEndian.AppendUint32(nil, q.Mark)})
	}
	data, err := netlink.MarshalAttributes(attrs)
	if err != nil {
		return Answer{}, fmt.Errorf("query %s: %w", q, err)
	}
	msgs, err := c.Execute(netlink.Message{Header: netlink.Header{Type: unix.RTM_GETROUTE, Flags: netlink.Request},
		Data: append(rtm, data...)})
	if err != nil {
		return Answer{}, fmt.Errorf("route get: %w", err)
	}
	if len(msgs) != 1 || len(msgs[0].Data) < unix.SizeofRtMsg {
		return Answer{}, fmt.Errorf("route get: %d answers", len(msgs))
	}
	return decode(msgs[0].Data)
}

func decode(b []byte) (Answer, error) {
	a := Answer{Type: b[7], Table: uint32(b[4])}
	ad, err := netlink.NewAttributeDecoder(b[unix.SizeofRtMsg:])
	if err != nil {
		return a, fmt.Errorf("decode route: %w", err)
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.RTA_TABLE:
			a.Table = ad.Uint32()
		case unix.RTA_GATEWAY:
			gw, ok := netip.AddrFromSlice(ad.Bytes())
			if !ok {
				return a, errors.New("decode route: bad RTA_GATEWAY")
			}
			a.Gateway = gw.Unmap()
		}
	}
	if err := ad.Err(); err != nil {
		return a, fmt.Errorf("decode route: %w", err)
	}
	return a, nil
}
