package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/sllbrd/sllbrd/model"
)

// MaxProbePayload bounds Probe.Payload.
const MaxProbePayload = 1024

// Probe describes a synthetic packet for Explain: the first packet of a
// flow, as a client would send it. It is never sent anywhere.
type Probe struct {
	// Protocol is TCP (a SYN), UDP, SCTP (an INIT chunk unless Payload is
	// given), ICMP (an IPv4 echo request) or ICMPv6 (an IPv6 echo request).
	Protocol model.Protocol
	// Src and Dst are the flow's addresses and ports, of one family
	// (IPv4-mapped IPv6 addresses count as IPv4). For an echo request,
	// Src's port is the echo identifier and Dst's port must be 0.
	Src, Dst netip.AddrPort
	// Payload follows the transport header (the UDP or TCP data, SCTP
	// chunks, the echo data); at most MaxProbePayload bytes.
	Payload []byte
	// CopyRange cuts the packet to the bytes nfqueue copies to user space
	// (sllbrd's --copy-range), as the kernel would; 0 keeps it whole.
	CopyRange int
}

// Header lengths and fields of the packets a Probe builds.
const (
	ipv4HeaderLen  = 20
	ipv6HeaderLen  = 40
	tcpHeaderLen   = 20
	udpHeaderLen   = 8
	sctpHeaderLen  = 12
	sctpInitLen    = 20
	echoHeaderLen  = 8
	probeHopLimit  = 64
	tcpFlagSYN     = 0x02
	sctpChunkInit  = 1
	icmpEchoReq4   = 8
	icmpEchoReq6   = 128
	ipv4FlagDF     = 0x4000
	tcpDataOffset5 = 5 << 4
)

// validate checks the probe at the boundary: one family, a protocol
// sllbrd balances, no port where the protocol has none.
func (pr *Probe) validate() error {
	src, dst := pr.Src.Addr().Unmap(), pr.Dst.Addr().Unmap()
	var errs []error
	if !src.IsValid() || !dst.IsValid() {
		errs = append(errs, errors.New("source and destination addresses are required"))
	} else if src.Is4() != dst.Is4() {
		errs = append(errs, fmt.Errorf("source %v and destination %v are of different address families", src, dst))
	}
	switch pr.Protocol {
	case model.ProtoTCP, model.ProtoUDP, model.ProtoSCTP:
	case model.ProtoICMP, model.ProtoICMPv6:
		if want4 := pr.Protocol == model.ProtoICMP; dst.IsValid() && dst.Is4() != want4 {
			errs = append(errs, fmt.Errorf("%v needs %s addresses", pr.Protocol, map[bool]string{true: "IPv4", false: "IPv6"}[want4]))
		}
		if pr.Dst.Port() != 0 {
			errs = append(errs, fmt.Errorf("%v: the destination has no port (the source port is the echo identifier)", pr.Protocol))
		}
	default:
		errs = append(errs, fmt.Errorf("protocol %v: want tcp, udp, sctp, icmp or icmpv6", pr.Protocol))
	}
	if len(pr.Payload) > MaxProbePayload {
		errs = append(errs, fmt.Errorf("payload of %d bytes: at most %d", len(pr.Payload), MaxProbePayload))
	}
	if pr.CopyRange < 0 {
		errs = append(errs, fmt.Errorf("copy range %d: must not be negative", pr.CopyRange))
	}
	return errors.Join(errs...)
}

// bytes builds the probe's IP packet (checksums left zero: nothing reads
// them) and returns it cut to CopyRange, with its full length.
func (pr *Probe) bytes() (b []byte, wireLen int) {
	l4 := pr.transport()
	src, dst := pr.Src.Addr().Unmap(), pr.Dst.Addr().Unmap()
	proto := byte(pr.Protocol)
	if src.Is4() {
		b = make([]byte, ipv4HeaderLen, ipv4HeaderLen+len(l4))
		b[0] = 0x45
		binary.BigEndian.PutUint16(b[2:4], uint16(ipv4HeaderLen+len(l4)))
		binary.BigEndian.PutUint16(b[6:8], ipv4FlagDF)
		b[8], b[9] = probeHopLimit, proto
		s, d := src.As4(), dst.As4()
		copy(b[12:16], s[:])
		copy(b[16:20], d[:])
	} else {
		b = make([]byte, ipv6HeaderLen, ipv6HeaderLen+len(l4))
		b[0] = 0x60
		binary.BigEndian.PutUint16(b[4:6], uint16(len(l4)))
		b[6], b[7] = proto, probeHopLimit
		s, d := src.As16(), dst.As16()
		copy(b[8:24], s[:])
		copy(b[24:40], d[:])
	}
	b = append(b, l4...)
	wireLen = len(b)
	if pr.CopyRange > 0 && len(b) > pr.CopyRange {
		b = b[:pr.CopyRange]
	}
	return b, wireLen
}

// transport builds the transport header and payload.
func (pr *Probe) transport() []byte {
	sport, dport := pr.Src.Port(), pr.Dst.Port()
	var h []byte
	switch pr.Protocol {
	case model.ProtoTCP:
		h = make([]byte, tcpHeaderLen)
		h[12], h[13] = tcpDataOffset5, tcpFlagSYN
		binary.BigEndian.PutUint16(h[14:16], 0xffff) // window
	case model.ProtoUDP:
		h = make([]byte, udpHeaderLen)
		binary.BigEndian.PutUint16(h[4:6], uint16(udpHeaderLen+len(pr.Payload)))
	case model.ProtoSCTP:
		h = make([]byte, sctpHeaderLen)
		if pr.Payload == nil {
			h = append(h, sctpInit()...)
		}
	default: // echo request: type, code, checksum, identifier, sequence
		h = make([]byte, echoHeaderLen)
		h[0] = icmpEchoReq4
		if pr.Protocol == model.ProtoICMPv6 {
			h[0] = icmpEchoReq6
		}
		binary.BigEndian.PutUint16(h[4:6], sport)
		binary.BigEndian.PutUint16(h[6:8], 1)
		return append(h, pr.Payload...)
	}
	binary.BigEndian.PutUint16(h[0:2], sport)
	binary.BigEndian.PutUint16(h[2:4], dport)
	return append(h, pr.Payload...)
}

// sctpInit is an INIT chunk (RFC 9260 section 3.3.2): the first chunk of
// an association.
func sctpInit() []byte {
	c := make([]byte, sctpInitLen)
	c[0] = sctpChunkInit
	binary.BigEndian.PutUint16(c[2:4], sctpInitLen)
	binary.BigEndian.PutUint32(c[4:8], 1)       // initiate tag, never 0
	binary.BigEndian.PutUint32(c[8:12], 0xffff) // advertised receiver window
	binary.BigEndian.PutUint16(c[12:14], 1)     // outbound streams
	binary.BigEndian.PutUint16(c[14:16], 1)     // inbound streams
	return c
}
