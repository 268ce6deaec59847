package bpfpath

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// tcpHeaderLen is the TCP header sizedFrame builds: 20 bytes and 12 of
// options (NOPs), as with timestamps.
const tcpHeaderLen = 32

// sizedFrame is an Ethernet frame of a UDP or TCP packet from src to dst,
// ipLen bytes long from its IP header on, with TTL (hop limit) ttl,
// addressed at layer 2 to BPF_PROG_TEST_RUN's device (PACKET_HOST). A TCP
// header is tcpHeaderLen bytes long. An IPv4 header has opts bytes of
// options (NOPs), DF when df, and a valid checksum.
func sizedFrame(proto uint8, src, dst netip.AddrPort, ttl uint8, ipLen, opts int, df bool) []byte {
	hlen := ipv6HeaderLen
	if src.Addr().Is4() {
		hlen = ipv4MinHeaderLen + opts
	}
	l4 := make([]byte, ipLen-hlen)
	binary.BigEndian.PutUint16(l4[0:], src.Port())
	binary.BigEndian.PutUint16(l4[2:], dst.Port())
	if proto == protoTCP {
		l4[12], l4[13] = tcpHeaderLen/4<<4, 0x10 // data offset, ACK
		for i := 20; i < tcpHeaderLen; i++ {
			l4[i] = 1 // NOP
		}
	} else {
		binary.BigEndian.PutUint16(l4[4:], uint16(len(l4)))
	}
	var f []byte
	if src.Addr().Is4() {
		ip := make([]byte, hlen, ipLen)
		ip[0], ip[8], ip[9] = 0x40|byte(hlen/4), ttl, proto
		binary.BigEndian.PutUint16(ip[2:], uint16(ipLen))
		if df {
			ip[6] = 0x40
		}
		copy(ip[12:], src.Addr().AsSlice())
		copy(ip[16:], dst.Addr().AsSlice())
		for i := ipv4MinHeaderLen; i < hlen; i++ {
			ip[i] = 1
		}
		binary.BigEndian.PutUint16(ip[10:], ipv4Checksum(ip))
		f = ether(etherIPv4, append(ip, l4...), nil)
	} else {
		ip := make([]byte, hlen, ipLen)
		ip[0], ip[6], ip[7] = 0x60, proto, ttl
		binary.BigEndian.PutUint16(ip[4:], uint16(ipLen-hlen))
		copy(ip[8:], src.Addr().AsSlice())
		copy(ip[24:], dst.Addr().AsSlice())
		f = ether(etherIPv6, append(ip, l4...), nil)
	}
	clear(f[0:6])
	return f
}

// TestIntegrationForwardMTU: a decided packet longer than its next hop's
// MTU goes to the stack unchanged and marked (ActionTooBig), whatever its
// DF bit; one of exactly the MTU is redirected. Of a GSO skb, the
// segments are judged (IP header, TCP header by its data offset or 8
// bytes, gso_size), as the kernel's skb_gso_validate_network_len: a
// segment of the MTU is redirected, one byte more is not; GSO_BY_FRAGS is
// too big. A TTL 1 packet that is also too big is time exceeded (the
// kernel checks the TTL first), and a next hop of MTU 0 (not known)
// redirects nothing.
func TestIntegrationForwardMTU(t *testing.T) {
	require.Root(t)
	d, svc := loadOneService(t)
	const mtu = 1280
	var hops []NextHop
	for slot := range 10 {
		m := mtu
		if slot == 9 {
			m = 0 // not known
		}
		hops = append(hops, NextHop{Mark: testMark(slot), Via: netip.AddrFrom4([4]byte{10, 9, 0, byte(slot)}), Ifindex: 7, MTU: m},
			NextHop{Mark: testMark(slot), Via: netip.AddrFrom16([16]byte{0xfd, 9, 15: byte(slot)}), Ifindex: 7, MTU: m})
	}
	if err := d.SetNextHops(hops); err != nil {
		t.Fatal(err)
	}
	// A source port whose flow goes to slot 9 (MTU 0), or to another.
	port := func(proto uint8, src, vip netip.Addr, toNine bool) uint16 {
		return portToSlot9(t, svc, toNine, func(p uint16) []byte {
			return sizedFrame(proto, netip.AddrPortFrom(src, p), netip.AddrPortFrom(vip, 53), 64, 100, 0, false)
		})
	}
	type tc struct {
		name     string
		frame    []byte
		gso      uint32 // the skb's gso_size; 0: not a GSO skb
		redirect bool
		action   Action // when not redirected
	}
	var cases []tc
	for _, fam := range []struct {
		src, vip netip.Addr
		hlen     int
	}{{netip.MustParseAddr("11.0.0.1"), testVIP4, ipv4MinHeaderLen}, {netip.MustParseAddr("fd0b::1"), testVIP6, ipv6HeaderLen}} {
		for _, proto := range []uint8{protoUDP, protoTCP} {
			thlen := 8
			if proto == protoTCP {
				thlen = tcpHeaderLen
			}
			from := netip.AddrPortFrom(fam.src, port(proto, fam.src, fam.vip, false))
			unknown := netip.AddrPortFrom(fam.src, port(proto, fam.src, fam.vip, true))
			vip := netip.AddrPortFrom(fam.vip, 53)
			frame := func(ttl uint8, ipLen int, df bool) []byte {
				return sizedFrame(proto, from, vip, ttl, ipLen, 0, df)
			}
			name := fmt.Sprintf("IPv%d proto %d", 4+2*btoi(fam.vip.Is6()), proto)
			// The largest payload per segment that fits: IP header,
			// transport header and gso_size make the MTU.
			fits := uint32(mtu - fam.hlen - thlen)
			cases = append(cases,
				tc{name + " at the MTU", frame(64, mtu, true), 0, true, 0},
				tc{name + " one above, DF", frame(64, mtu+1, true), 0, false, ActionTooBig},
				tc{name + " 1500, no DF", frame(64, 1500, false), 0, false, ActionTooBig},
				tc{name + " too big, TTL 1", frame(1, mtu+1, true), 0, false, ActionTTLExceeded},
				tc{name + " GSO below the MTU", frame(64, mtu, true), 100, true, 0},
				tc{name + " GSO, segments of the MTU", frame(64, 3000, true), fits, true, 0},
				tc{name + " GSO, segments one above", frame(64, 3000, true), fits + 1, false, ActionTooBig},
				tc{name + " GSO_BY_FRAGS", frame(64, 3000, true), 0xffff, false, ActionTooBig},
				tc{name + " MTU 0", sizedFrame(proto, unknown, vip, 64, 100, 0, true), 0, false, ActionTooBig},
			)
			if fam.vip.Is4() {
				// 40 bytes of IPv4 options count in a segment too.
				const opts = 40
				cases = append(cases,
					tc{name + " options, GSO, segments of the MTU", sizedFrame(proto, from, vip, 64, 3000, opts, true), fits - opts, true, 0},
					tc{name + " options, GSO, segments one above", sizedFrame(proto, from, vip, 64, 3000, opts, true), fits - opts + 1, false, ActionTooBig})
			}
		}
	}
	var wantActions [numActions]Count
	for _, c := range cases {
		want, _ := expect(c.frame, svc)
		if want.Status != StatusDecided {
			t.Fatalf("%s: %v, want a decided packet", c.name, want.Status)
		}
		in := skbContext{IngressIfindex: 1}
		if c.gso != 0 {
			in.GSOSize, in.GSOSegs = c.gso, 2
		}
		got := runOnLinkWith(t, d, c.frame, in)
		a := c.action
		if c.redirect {
			a = ActionRedirect
			if got.verdict != tcActRedirect || got.mark != want.Mark || got.result != want {
				t.Errorf("%s: verdict %d, mark %#x, %+v; want %d (redirect), %#x, %+v", c.name, got.verdict, got.mark, got.result, tcActRedirect, want.Mark, want)
			}
		} else if got.verdict != -1 || got.mark != want.Mark || got.result != want || !bytes.Equal(got.frame, c.frame) {
			t.Errorf("%s: verdict %d, mark %#x, %+v, frame changed: %v; want -1 (TC_ACT_UNSPEC), %#x, %+v, unchanged",
				c.name, got.verdict, got.mark, got.result, !bytes.Equal(got.frame, c.frame), want.Mark, want)
		}
		wantActions[a].Packets++
		wantActions[a].Bytes += uint64(len(c.frame) - ethHeaderLen)
	}
	if got := mustCounters(t, d).Actions; got != wantActions {
		t.Errorf("action counters %+v, want %+v", got, wantActions)
	}
	t.Logf("%d cases: %d redirected, %d too big, %d time exceeded", len(cases),
		wantActions[ActionRedirect].Packets, wantActions[ActionTooBig].Packets, wantActions[ActionTTLExceeded].Packets)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
