package lab

import (
	"net/netip"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
)

// TestSCTPErrorMatching: the error of a host without SCTP, from the VIP and
// quoting the INIT as sent, is the answer; errors of another type or
// pointer are refused; quotes of another INIT, another association or too
// little of it are not ours; short or damaged messages never panic.
func TestSCTPErrorMatching(t *testing.T) {
	vip4, vip6 := DefaultVIPs[0], DefaultVIPs[2]
	init := func(vip netip.Addr, sport uint16, tag uint32) []byte {
		f := testpkt.Flow{Src: ClientAddrs().For(vip), Dst: vip, Proto: 132, SrcPort: sport, DstPort: 9}
		return testpkt.SCTPInit(f, tag, testpkt.Options{})
	}
	// icmp is the error as a raw ICMP socket reads it: IPv4 with its IP
	// header, ICMPv6 without; pointer is the ICMPv6 parameter problem's.
	icmp := func(vip netip.Addr, quoted []byte, typ, code uint8, pointer byte) []byte {
		b := testpkt.ICMPError(vip, quoted, typ, code, 0)
		if vip.Is6() {
			b = b[40:]
			b[7] = pointer
		}
		return b
	}
	sent4, sent6 := init(vip4, 20000, 7), init(vip6, 20000, 7)
	ttl := append([]byte(nil), sent4...)
	ttl[8], ttl[10], ttl[11] = 62, 0, 0 // two hops later, checksum not recomputed
	for _, tc := range []struct {
		name        string
		sent, msg   []byte
		quotes, ans bool
	}{
		{"v4 protocol unreachable", sent4, icmp(vip4, sent4, 3, 2, 0), true, true},
		{"v4 after two routers", sent4, icmp(vip4, ttl, 3, 2, 0), true, true},
		{"v6 unrecognized next header", sent6, icmp(vip6, sent6, 4, 1, 6), true, true},
		{"v4 net unreachable", sent4, icmp(vip4, sent4, 3, 0, 0), true, false},
		{"v6 pointer elsewhere", sent6, icmp(vip6, sent6, 4, 1, 0), true, false},
		{"v6 no route", sent6, icmp(vip6, sent6, 1, 0, 0), true, false},
		{"v4 earlier INIT", sent4, icmp(vip4, init(vip4, 20000, 6), 3, 2, 0), false, false},
		{"v6 other association", sent6, icmp(vip6, init(vip6, 20001, 7), 4, 1, 6), false, false},
		{"v6 other VIP", sent6, icmp(vip6, init(DefaultVIPs[3], 20000, 7), 4, 1, 6), false, false},
		{"v4 RFC 792 minimum quote", sent4, icmp(vip4, sent4[:28], 3, 2, 0), false, false},
		{"v6 quote cut", sent6, icmp(vip6, sent6[:len(sent6)-1], 4, 1, 6), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := parseICMPError(tc.msg, tc.sent[0]>>4 == 4)
			if !ok {
				t.Fatalf("% x not parsed", tc.msg)
			}
			if q := quotes(e.quote, tc.sent); q != tc.quotes {
				t.Errorf("quotes = %v, want %v", q, tc.quotes)
			}
			if a := e.noSCTP(); tc.quotes && a != tc.ans {
				t.Errorf("type %d code %d rest %d: noSCTP = %v, want %v", e.typ, e.code, e.rest, a, tc.ans)
			}
		})
	}
	for _, b := range [][]byte{nil, {0x45}, make([]byte, 20), append([]byte{0x4f}, make([]byte, 19)...), icmp(vip4, sent4, 3, 2, 0)[:27]} {
		if e, ok := parseICMPError(b, true); ok {
			quotes(e.quote, sent4) // must not panic
		}
	}
	for _, b := range [][]byte{nil, make([]byte, 8), make([]byte, 9)} {
		if e, ok := parseICMPError(b, false); ok {
			quotes(e.quote, sent6)
		}
	}
}
