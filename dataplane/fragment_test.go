package dataplane

import (
	"encoding/binary"
	"testing"

	"github.com/sllbrd/sllbrd/dataplane/packet"
	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
)

// TestIPv6FragmentsBehindExtensionHeadersFollowFirst: with AH or
// Destination Options after the fragment header, a later fragment's header
// names AH or Destination Options while the first fragment decodes to UDP.
// RFC 8200 section 4.5 names the datagram by (source, destination,
// identification): the later fragments follow (or wait for) the first.
func TestIPv6FragmentsBehindExtensionHeadersFollowFirst(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	d := NewDecision()
	for i, h := range []testpkt.FragmentHeaders{{AH: true}, {DestOpts: true}, {AH: true, DestOpts: true}} {
		id := uint32(100 + i)
		frags := testpkt.FragmentsWith(flow(addr("fd00::9"), vip6, 17, uint16(4000+i), 5000), make([]byte, 3000), 1200, id, h)
		first := decide(e, frags[0])
		if first.Verdict != Accept {
			t.Fatalf("%+v: first fragment %v/%v", h, first.Verdict, first.Reason)
		}
		for _, f := range frags[1:] {
			if got := decide(e, f); got.Verdict != Accept || got.Mark != first.Mark || got.Reason != ReasonFragmentFollowed {
				t.Errorf("%+v: later fragment %v/%v mark %d, first had mark %d", h, got.Verdict, got.Reason, got.Mark, first.Mark)
			}
		}
		// The same datagram with its later fragments first: held, then
		// released by the first fragment.
		frags = testpkt.FragmentsWith(flow(addr("fd00::9"), vip6, 17, uint16(4000+i), 5000), make([]byte, 3000), 1200, id+50, h)
		for j, f := range frags[1:] {
			if e.Decide(f, len(f), uint64(j), d); d.Verdict != Hold {
				t.Fatalf("%+v: early later fragment %v/%v, want hold", h, d.Verdict, d.Reason)
			}
		}
		if e.Decide(frags[0], len(frags[0]), 9, d); d.Verdict != Accept || len(d.Tokens.Release) != len(frags)-1 {
			t.Errorf("%+v: first fragment released %v, want the %d held", h, d.Tokens.Release, len(frags)-1)
		}
	}
}

// TestIPv4FragmentKeyKeepsProtocol: RFC 791 section 3.2 names an IPv4
// datagram by source, destination, protocol and identification: a later
// fragment of another protocol with the same identification does not
// follow.
func TestIPv4FragmentKeyKeepsProtocol(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	c := addr("10.0.0.9")
	udp := testpkt.Fragments(flow(c, vip4, 17, 3333, 5000), make([]byte, 3000), 1200, 77)
	tcp := testpkt.Fragments(flow(c, vip4, 6, 3333, 80), make([]byte, 3000), 1200, 77)
	if d := decide(e, udp[0]); d.Verdict != Accept {
		t.Fatalf("first fragment %v", d.Reason)
	}
	if d := decide(e, tcp[1]); d.Reason != ReasonFragmentHeld {
		t.Errorf("TCP later fragment with the UDP datagram's id: %v, want held", d.Reason)
	}
}

func TestHoldFullDropsEarlyFragments(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	frags := testpkt.Fragments(flow(addr("10.0.0.9"), vip4, 17, 3333, 5000), make([]byte, 3000), 1200, 42)
	d := NewDecision()
	e.DecideMeta(frags[1], Meta{Length: len(frags[1]), Token: 1, HoldFull: true}, d)
	if d.Verdict != Drop || d.Reason != ReasonFragmentHoldLimit {
		t.Fatalf("early fragment with the queue's hold limit reached: %v/%v, want drop/fragment_hold_limit", d.Verdict, d.Reason)
	}
	// A later fragment whose first fragment is known still follows it.
	e.Decide(frags[0], len(frags[0]), 2, d)
	mark := d.Mark
	e.DecideMeta(frags[2], Meta{Length: len(frags[2]), Token: 3, HoldFull: true}, d)
	if d.Verdict != Accept || d.Mark != mark {
		t.Errorf("known datagram with the hold limit reached: %v/%v, want accept", d.Verdict, d.Reason)
	}
	if n, _ := e.ReasonCount(ReasonFragmentHoldLimit); n != 1 {
		t.Errorf("fragment_hold_limit counted %d, want 1", n)
	}
}

// TestFragmentedEchoFollowsTheEchoRule: a ping too big for the path is
// balanced like any echo (destination and source only, identifier as
// ports), and its later fragments follow.
func TestFragmentedEchoFollowsTheEchoRule(t *testing.T) {
	st := testState()
	st.Routes = st.Routes[:1] // echo takes the highest-priority route: not the one without endpoints
	e, _ := newTestEngine(t, st)
	for _, c := range []string{"10.0.0.9", "fd00::9"} {
		src, vip := addr(c), vip4
		if src.Is6() {
			vip = vip6
		}
		for echoID := uint16(1); echoID <= 20; echoID++ {
			whole := decide(e, testpkt.Echo(src, vip, echoID, 1))
			frags := testpkt.EchoFragments(src, vip, echoID, 2, make([]byte, 3000), 1200, uint32(echoID))
			first := decide(e, frags[0])
			if whole.Verdict != Accept || first.Verdict != Accept || first.Mark != whole.Mark {
				t.Fatalf("%v echo %d: first fragment %v/%v mark %d, whole echo mark %d", vip, echoID, first.Verdict, first.Reason, first.Mark, whole.Mark)
			}
			for _, f := range frags[1:] {
				if d := decide(e, f); d.Verdict != Accept || d.Mark != first.Mark {
					t.Fatalf("%v echo %d: later fragment %v/%v", vip, echoID, d.Verdict, d.Reason)
				}
			}
		}
	}
}

// TestParameterProblemReachesTheFlowsEndpoint: ICMP type 12 and ICMPv6
// type 4 quote the packet that caused them, like the other errors.
func TestParameterProblemReachesTheFlowsEndpoint(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	for _, tc := range []struct {
		client, vip, router string
		typ                 uint8
	}{{"10.0.0.7", "20.0.0.1", "192.0.2.254", 12}, {"fd00::7", "2001:db8::1", "2001:db8:ff::fe", 4}} {
		for port := uint16(2000); port < 2030; port++ {
			in := flow(addr(tc.client), addr(tc.vip), 6, port, 443)
			fwd := decide(e, testpkt.Packet(in, nil, testpkt.Options{}))
			reply := testpkt.Packet(in.Reverse(), make([]byte, 100), testpkt.Options{})
			d := decide(e, testpkt.ICMPError(addr(tc.router), reply, tc.typ, 0, 0))
			if d.Verdict != Accept || d.Mark != fwd.Mark {
				t.Fatalf("%s parameter problem: %v/%v mark %d, flow mark %d", tc.vip, d.Verdict, d.Reason, d.Mark, fwd.Mark)
			}
		}
	}
}

// TestGSOAggregatesAreBalanced: a BIG TCP aggregate over 64 KiB states no
// IP length (IPv4 total length 0, IPv6 payload length 0); with nfqueue's
// GSO flag it is balanced like the flow's other packets, without it
// IPv4 is undecodable as the kernel would have it.
func TestGSOAggregatesAreBalanced(t *testing.T) {
	e, _ := newTestEngine(t, testState())
	d := NewDecision()
	for _, c := range []string{"10.0.0.9", "fd00::9"} {
		src, vip := addr(c), vip4
		if src.Is6() {
			vip = vip6
		}
		b := testpkt.Packet(flow(src, vip, 6, 40000, 80), make([]byte, 200), testpkt.Options{})
		e.Decide(b, len(b), 1, d)
		want := d.Mark
		if src.Is4() {
			binary.BigEndian.PutUint16(b[2:4], 0)
		} else {
			binary.BigEndian.PutUint16(b[4:6], 0)
		}
		e.DecideMeta(b[:128], Meta{Length: 130000, GSO: true}, d)
		if d.Verdict != Accept || d.Mark != want {
			t.Errorf("%v GSO aggregate: %v/%v (%v) mark %d, want the flow's mark %d", vip, d.Verdict, d.Reason, d.Packet().Err, d.Mark, want)
		}
		e.DecideMeta(b[:128], Meta{Length: 130000}, d)
		if d.Reason != ReasonUndecodable {
			t.Errorf("%v zero length without the GSO flag: %v, want undecodable", vip, d.Reason)
		}
		if src.Is4() && d.Packet().Err != packet.ErrBadTotalLength {
			t.Errorf("IPv4 zero total length: %v", d.Packet().Err)
		}
	}
}
