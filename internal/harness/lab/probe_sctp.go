package lab

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"

	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
	"golang.org/x/sys/unix"
)

// sctpProber probes one fixed SCTP association (a port pair) to a VIP
// although the lab's kernel has no SCTP: the client cannot make an SCTP
// socket, nor can a target accept an association. Every
// Interval it sends, from a raw socket, the association's INIT with a new
// initiate tag; the target's kernel, lacking the protocol, answers with an
// ICMP error from the VIP (IPv4: destination unreachable, protocol
// unreachable; IPv6: parameter problem, unrecognized Next Header, pointing
// at the IPv6 header's Next Header field) that quotes the INIT, which a raw
// ICMP socket on the client reads. The INIT crosses the load balancer like
// any SCTP packet and the error comes back like any reply from the VIP, so
// the probe sees the forward and the return path; it cannot tell which
// target answered. Linux quotes the whole INIT (up to 576 bytes of IPv4
// error, 1280 of IPv6), which must come back byte for byte.
type sctpProber struct {
	kind    string
	o       ProbeOptions
	vip     netip.Addr
	srcPort uint16
	flow    Flow
	send    *os.File    // raw socket sending whole IP packets to the VIP
	recv    *net.IPConn // raw ICMP socket on the client's address
	tag     uint32      // the last INIT's initiate tag
}

// ICMP errors a host without SCTP sends for an SCTP packet to one of its
// addresses (Linux: ip_protocol_deliver_rcu, ip6_protocol_deliver_rcu).
const (
	icmpv4Unreachable     = 3
	icmpv4ProtoUnreach    = 2 // code of icmpv4Unreachable
	icmpv6ParamProblem    = 4
	icmpv6UnknownNextHdr  = 1 // code of icmpv6ParamProblem
	ipv6NextHeaderPointer = 6 // offset of the Next Header field in the IPv6 header
)

func (p *sctpProber) open() error {
	client := ClientAddrs().For(p.vip)
	p.flow = Flow{Proto: "sctp", Src: netip.AddrPortFrom(client, p.srcPort), Dst: netip.AddrPortFrom(p.vip, p.o.SCTPPort)}
	fd, err := rawSocket(p.vip)
	if err != nil {
		return fmt.Errorf("%s %s: %w", p.kind, p.flow, err)
	}
	p.send = os.NewFile(uintptr(fd), "raw socket to "+p.vip.String())
	if p.recv, err = listenICMP(client); err != nil {
		return fmt.Errorf("%s %s: %w", p.kind, p.flow, err)
	}
	p.tag = rand.Uint32()
	return nil
}

func (p *sctpProber) close() error {
	var errs []error
	if p.send != nil {
		errs = append(errs, p.send.Close())
	}
	if p.recv != nil {
		errs = append(errs, p.recv.Close())
	}
	return errors.Join(errs...)
}

func (p *sctpProber) run(ctx context.Context, record func(ProbeResult)) {
	buf := make([]byte, 1500)
	f := testpkt.Flow{Src: p.flow.Src.Addr(), Dst: p.vip, Proto: unix.IPPROTO_SCTP, SrcPort: p.srcPort, DstPort: p.o.SCTPPort}
	probeEvery(ctx, p.o.Interval, record, func(r *ProbeResult) error {
		if p.tag++; p.tag == 0 { // an initiate tag is never 0
			p.tag++
		}
		r.Kind, r.Flow = p.kind, p.flow.String()
		pkt := testpkt.SCTPInit(f, p.tag, testpkt.Options{})
		err := p.recv.SetDeadline(r.At.Add(p.o.Timeout))
		if err == nil {
			_, err = p.send.Write(pkt)
		}
		if err == nil {
			err = p.awaitError(buf, pkt)
		}
		if err != nil {
			return fmt.Errorf("%s %s tag %#x: %w", p.kind, p.flow, p.tag, err)
		}
		return nil
	})
}

// awaitError reads ICMP messages until one quotes pkt, or the deadline. The
// answer is the expected error from the VIP; any other error quoting pkt
// (say a router's unreachable) fails the probe at once; messages that do
// not quote pkt (other probes', late answers to earlier INITs) are skipped.
func (p *sctpProber) awaitError(buf, pkt []byte) error {
	for {
		n, _, _, from, err := p.recv.ReadMsgIP(buf, nil)
		if err != nil {
			return err
		}
		e, ok := parseICMPError(buf[:n], p.vip.Is4())
		if !ok || !quotes(e.quote, pkt) {
			continue
		}
		src, _ := netip.AddrFromSlice(from.IP)
		src = src.Unmap()
		if src != p.vip || !e.noSCTP() {
			return fmt.Errorf("ICMP type %d code %d (rest %#x) from %s, want the VIP's %s", e.typ, e.code, e.rest, src, noSCTPError(p.vip))
		}
		return nil
	}
}

// icmpError is an ICMP or ICMPv6 error message.
type icmpError struct {
	is4       bool
	typ, code uint8
	rest      uint32 // the header's second word (ICMPv6 parameter problem: the pointer)
	quote     []byte // the packet quoted
}

// parseICMPError reads a message from a raw ICMP socket: for IPv4 the whole
// packet (IP header first), for IPv6 the ICMPv6 message alone. ok is false
// if it is too short to be one.
func parseICMPError(b []byte, is4 bool) (e icmpError, ok bool) {
	e.is4 = is4
	if is4 {
		if len(b) < 20 || b[0]>>4 != 4 || len(b) < int(b[0]&0x0f)*4 {
			return e, false
		}
		b = b[int(b[0]&0x0f)*4:]
	}
	if len(b) < 8+1 { // header and one byte of quote
		return e, false
	}
	e.typ, e.code, e.rest, e.quote = b[0], b[1], binary.BigEndian.Uint32(b[4:8]), b[8:]
	return e, true
}

// noSCTP tells whether e is what a host without SCTP answers.
func (e icmpError) noSCTP() bool {
	if e.is4 {
		return e.typ == icmpv4Unreachable && e.code == icmpv4ProtoUnreach
	}
	return e.typ == icmpv6ParamProblem && e.code == icmpv6UnknownNextHdr && e.rest == ipv6NextHeaderPointer
}

func noSCTPError(vip netip.Addr) string {
	if vip.Is4() {
		return "protocol unreachable (type 3 code 2)"
	}
	return "parameter problem, unrecognized next header (type 4 code 1, pointer 6)"
}

// quotes tells whether quote holds the packet pkt (an IPv4 packet without
// options or an IPv6 packet without extension headers, as testpkt builds
// them) as it left the client: same version (and IPv4 header length),
// protocol, and every byte from the addresses on (the addresses end the IP
// header). TTL, hop limit and the IPv4 checksum change on the way and are
// not compared.
func quotes(quote, pkt []byte) bool {
	if len(quote) < len(pkt) {
		return false
	}
	proto, addrs, first := 6, 8, quote[0]>>4 == pkt[0]>>4
	if pkt[0]>>4 == 4 {
		proto, addrs, first = 9, 12, quote[0] == pkt[0]
	}
	return first && quote[proto] == pkt[proto] && bytes.Equal(quote[addrs:len(pkt)], pkt[addrs:])
}
