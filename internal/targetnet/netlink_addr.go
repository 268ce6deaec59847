package targetnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/tableroute"
)

// ifaProto is IFA_PROTO (linux/if_addr.h, kernel 5.18): who added an
// address. rtnetlink/v2 does not know it, so addresses are encoded here.
const ifaProto = 11

// sizeofIfAddrmsg is struct ifaddrmsg: family, prefixlen, flags, scope
// (one byte each) and the interface index (u32).
const sizeofIfAddrmsg = 8

func ifaddrmsg(family, prefixLen, flags, scope uint8, index uint32) []byte {
	b := make([]byte, sizeofIfAddrmsg)
	b[0], b[1], b[2], b[3] = family, prefixLen, flags, scope
	binary.NativeEndian.PutUint32(b[4:], index)
	return b
}

// Addresses implements Kernel (RTM_GETADDR dump).
func (k *NetlinkKernel) Addresses() ([]Address, error) {
	msgs, err := k.raw.Execute(netlink.Message{
		Header: netlink.Header{Type: unix.RTM_GETADDR, Flags: netlink.Request | netlink.Dump},
		Data:   ifaddrmsg(unix.AF_UNSPEC, 0, 0, 0, 0),
	})
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	out := make([]Address, 0, len(msgs))
	for _, m := range msgs {
		a, ok, err := parseAddress(m.Data)
		if err != nil {
			return nil, fmt.Errorf("list addresses: %w", err)
		}
		if ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// parseAddress decodes one RTM_NEWADDR message; ok is false for families
// other than IPv4 and IPv6.
func parseAddress(b []byte) (Address, bool, error) {
	if len(b) < sizeofIfAddrmsg {
		return Address{}, false, errors.New("short ifaddrmsg")
	}
	if _, ok := tableroute.FamilyOfAF(b[0]); !ok {
		return Address{}, false, nil
	}
	a := Address{LinkIndex: binary.NativeEndian.Uint32(b[4:8])}
	ad, err := netlink.NewAttributeDecoder(b[sizeofIfAddrmsg:])
	if err != nil {
		return Address{}, false, err
	}
	var local, address netip.Addr
	for ad.Next() {
		switch ad.Type() {
		case unix.IFA_LOCAL:
			local, _ = netip.AddrFromSlice(ad.Bytes())
		case unix.IFA_ADDRESS:
			address, _ = netip.AddrFromSlice(ad.Bytes())
		case ifaProto:
			a.Protocol = ad.Uint8()
		}
	}
	if err := ad.Err(); err != nil {
		return Address{}, false, err
	}
	if local.IsValid() { // IPv4: IFA_LOCAL is ours, IFA_ADDRESS the peer's
		address = local
	}
	if !address.IsValid() {
		return Address{}, false, errors.New("address message without an address")
	}
	a.Prefix = netip.PrefixFrom(address.Unmap(), int(b[1]))
	return a, true, nil
}

// addressMessage encodes a for RTM_NEWADDR and RTM_DELADDR.
func addressMessage(a Address, add bool) ([]byte, error) {
	addr := a.Prefix.Addr()
	fam := tableroute.FamilyOf(addr)
	var flags uint32
	if fam == IPv6 {
		flags = unix.IFA_F_NODAD // a VIP is on every target: DAD would fail
	}
	attrs := []netlink.Attribute{{Type: unix.IFA_ADDRESS, Data: addr.AsSlice()}}
	if fam == IPv4 {
		attrs = append(attrs, netlink.Attribute{Type: unix.IFA_LOCAL, Data: addr.AsSlice()})
	}
	if add {
		fl := make([]byte, 4)
		binary.NativeEndian.PutUint32(fl, flags)
		attrs = append(attrs, netlink.Attribute{Type: unix.IFA_FLAGS, Data: fl},
			netlink.Attribute{Type: ifaProto, Data: []byte{a.Protocol}})
	}
	enc, err := netlink.MarshalAttributes(attrs)
	if err != nil {
		return nil, err
	}
	return append(ifaddrmsg(tableroute.AF(fam), uint8(a.Prefix.Bits()), uint8(flags), unix.RT_SCOPE_UNIVERSE, a.LinkIndex), enc...), nil
}

// AddAddress implements Kernel.
func (k *NetlinkKernel) AddAddress(a Address) error {
	data, err := addressMessage(a, true)
	if err != nil {
		return err
	}
	_, err = k.raw.Execute(netlink.Message{
		Header: netlink.Header{Type: unix.RTM_NEWADDR, Flags: netlink.Request | netlink.Acknowledge | netlink.Create | netlink.Excl},
		Data:   data,
	})
	return err
}

// DeleteAddress implements Kernel.
func (k *NetlinkKernel) DeleteAddress(a Address) error {
	data, err := addressMessage(a, false)
	if err != nil {
		return err
	}
	_, err = k.raw.Execute(netlink.Message{
		Header: netlink.Header{Type: unix.RTM_DELADDR, Flags: netlink.Request | netlink.Acknowledge},
		Data:   data,
	})
	return err
}

// DeleteNeighbour implements Kernel.
func (k *NetlinkKernel) DeleteNeighbour(ifIndex uint32, addr netip.Addr) error {
	return tableroute.DeleteNeighbour(k.rt, ifIndex, addr)
}
