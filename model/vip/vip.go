package vip

import (
	"errors"
	"fmt"
	"net/netip"
)

// ErrNotVIP is wrapped by every error of Check and Parse.
var ErrNotVIP = errors.New("not a VIP")

// Range is a block of addresses no VIP may lie in.
type Range struct {
	Prefix netip.Prefix
	// Kind names the block in messages ("loopback", ...); the CRD's CEL
	// messages use the same words.
	Kind string
}

// Last returns the last address of the range.
func (r Range) Last() netip.Addr {
	b := r.Prefix.Masked().Addr().AsSlice()
	for i := r.Prefix.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// Reserved lists the blocks no VIP may lie in, both families. These are
// the addresses Go's netip.Addr.IsGlobalUnicast refuses, plus IPv4's
// "this network" 0.0.0.0/8, which the kernel drops as a martian
// destination.
var Reserved = []Range{
	{netip.MustParsePrefix("0.0.0.0/8"), KindUnspecified},
	{netip.MustParsePrefix("::/128"), KindUnspecified},
	{netip.MustParsePrefix("127.0.0.0/8"), KindLoopback},
	{netip.MustParsePrefix("::1/128"), KindLoopback},
	{netip.MustParsePrefix("169.254.0.0/16"), KindLinkLocal},
	{netip.MustParsePrefix("fe80::/10"), KindLinkLocal},
	{netip.MustParsePrefix("224.0.0.0/4"), KindMulticast},
	{netip.MustParsePrefix("ff00::/8"), KindMulticast},
	{netip.MustParsePrefix("255.255.255.255/32"), KindBroadcast},
}

// The kinds of Reserved ranges.
const (
	KindUnspecified = "unspecified"
	KindLoopback    = "loopback"
	KindLinkLocal   = "link-local"
	KindMulticast   = "multicast"
	KindBroadcast   = "broadcast"
)

// Check returns nil when p may be a VIP, else why not.
func Check(p netip.Prefix) error {
	a := p.Addr()
	switch {
	case !p.IsValid():
		return fmt.Errorf("%w: %q is not an IP prefix", ErrNotVIP, p)
	case a.Zone() != "":
		return fmt.Errorf("%w: %s has a zone", ErrNotVIP, p)
	case a.Is4In6():
		return fmt.Errorf("%w: %s is an IPv4-mapped IPv6 address: write the IPv4 address", ErrNotVIP, p)
	case p.Bits() != a.BitLen():
		return fmt.Errorf("%w: %s must be an IPv4 /32 or IPv6 /128", ErrNotVIP, p)
	}
	for _, r := range Reserved {
		if r.Prefix.Contains(a) {
			return fmt.Errorf("%w: %s is %s (%s): a VIP must be a unicast address other hosts can reach",
				ErrNotVIP, p, article(r.Kind), r.Prefix)
		}
	}
	return nil
}

// Parse parses s ("20.0.0.1/32", "2001:db8::1/128") and checks it.
func Parse(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%w: %w", ErrNotVIP, err)
	}
	if err := Check(p); err != nil {
		return netip.Prefix{}, err
	}
	return p, nil
}

// article returns "a loopback address", "an unspecified address", ...
func article(kind string) string {
	if kind == KindUnspecified {
		return "an unspecified address"
	}
	return "a " + kind + " address"
}
