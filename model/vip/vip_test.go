package vip

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"20.0.0.1/32", ""},
		{"10.0.0.1/32", ""}, // private addresses are fine
		{"2001:db8::1/128", ""},
		{"fd00::1/128", ""},
		{"1.0.0.0/32", ""},
		{"223.255.255.255/32", ""},
		{"240.0.0.1/32", ""},
		{"169.253.255.255/32", ""},
		{"169.255.0.0/32", ""},
		{"fec0::1/128", ""},
		{"::2/128", ""},
		{"127.0.0.1/32", "127.0.0.1/32 is a loopback address (127.0.0.0/8)"},
		{"127.255.255.255/32", "loopback address (127.0.0.0/8)"},
		{"::1/128", "::1/128 is a loopback address (::1/128)"},
		{"0.0.0.0/32", "0.0.0.0/32 is an unspecified address (0.0.0.0/8)"},
		{"0.1.2.3/32", "an unspecified address (0.0.0.0/8)"},
		{"::/128", "::/128 is an unspecified address"},
		{"169.254.1.1/32", "is a link-local address (169.254.0.0/16)"},
		{"fe80::1/128", "is a link-local address (fe80::/10)"},
		{"febf:ffff::1/128", "link-local"},
		{"224.0.0.1/32", "is a multicast address (224.0.0.0/4)"},
		{"239.255.255.255/32", "multicast"},
		{"ff02::1/128", "is a multicast address (ff00::/8)"},
		{"255.255.255.255/32", "is a broadcast address"},
		{"::ffff:20.0.0.1/128", "IPv4-mapped"},
		{"20.0.0.0/24", "must be an IPv4 /32 or IPv6 /128"},
		{"2001:db8::/64", "must be an IPv4 /32 or IPv6 /128"},
		{"20.0.0.300/32", "not a VIP"},
		{"fe80::1%eth0/128", "not a VIP"},
		{"", "not a VIP"},
	} {
		p, err := Parse(tc.in)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Parse(%q): %v", tc.in, err)
		case tc.want == "" && p.String() != tc.in:
			t.Errorf("Parse(%q) = %s", tc.in, p)
		case tc.want != "" && (err == nil || !errors.Is(err, ErrNotVIP) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Parse(%q) = %v, want an ErrNotVIP saying %q", tc.in, err, tc.want)
		case tc.want != "" && p.IsValid():
			t.Errorf("Parse(%q) returned %s with its error", tc.in, p)
		}
	}
	if err := Check(netip.Prefix{}); err == nil || !errors.Is(err, ErrNotVIP) {
		t.Errorf("Check of the zero prefix: %v", err)
	}
}

// TestReservedIsNotGlobalUnicast holds Reserved to the standard library's
// notion of a unicast address other hosts can reach, plus 0.0.0.0/8: at
// the edges of every range and on random addresses of both families.
func TestReservedIsNotGlobalUnicast(t *testing.T) {
	thisNetwork := netip.MustParsePrefix("0.0.0.0/8")
	check := func(a netip.Addr) {
		want := a.IsGlobalUnicast() && !thisNetwork.Contains(a)
		if got := Check(netip.PrefixFrom(a, a.BitLen())) == nil; got != want {
			t.Errorf("%s: VIP %v, want %v", a, got, want)
		}
	}
	for _, r := range Reserved {
		first := r.Prefix.Addr()
		last := r.Last()
		for _, a := range []netip.Addr{first, last, first.Prev(), last.Next()} {
			if a.IsValid() {
				check(a)
			}
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		var b4 [4]byte
		var b16 [16]byte
		for i := range b16 {
			b16[i] = byte(rnd.UintN(256))
		}
		copy(b4[:], b16[:])
		check(netip.AddrFrom4(b4))
		if rnd.UintN(2) == 0 {
			b16[0] = []byte{0x00, 0xfe, 0xff}[rnd.UintN(3)] // near the IPv6 ranges more often
		}
		if a := netip.AddrFrom16(b16); !a.Is4In6() {
			check(a)
		}
	}
}
