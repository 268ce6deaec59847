package bfd

import (
	"encoding/binary"
	"errors"
	"time"
)

// Wire format of a BFD Control packet (RFC 5880 section 4.1):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|Vers |  Diag   |Sta|P|F|C|A|D|M|  Detect Mult  |    Length     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                       My Discriminator                        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Your Discriminator                       |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                    Desired Min TX Interval                    |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Required Min RX Interval                    |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Required Min Echo RX Interval                 |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
//	An optional Authentication Section MAY be present:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Auth Type   |   Auth Len    |    Authentication Data...     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Intervals are in microseconds. This package does not support
// authentication: packets with the A bit are discarded and the section is
// never written.

// Version is the BFD protocol version this package speaks.
const Version = 1

// PacketLen is the length of a BFD Control packet without authentication.
const PacketLen = 24

const (
	flagPoll        = 0x20
	flagFinal       = 0x10
	flagCPI         = 0x08
	flagAuth        = 0x04
	flagDemand      = 0x02
	flagMultipoint  = 0x01
	minAuthLen      = 26
	maxIntervalUsec = 1<<32 - 1
)

// ErrShortBuffer is returned by MarshalTo when the buffer is smaller than
// PacketLen.
var ErrShortBuffer = errors.New("bfd: buffer shorter than 24 bytes")

// Packet is a decoded BFD Control packet. Intervals are kept in microseconds,
// as on the wire.
type Packet struct {
	Version                 uint8
	Diag                    Diag
	State                   State
	Poll                    bool
	Final                   bool
	ControlPlaneIndependent bool
	AuthPresent             bool
	Demand                  bool
	Multipoint              bool
	DetectMult              uint8
	Length                  uint8
	MyDiscriminator         uint32
	YourDiscriminator       uint32
	DesiredMinTxUsec        uint32
	RequiredMinRxUsec       uint32
	RequiredMinEchoRxUsec   uint32
}

// Unmarshal decodes b into p and applies the reception checks of RFC 5880
// section 6.8.6 that need no session state. On failure it returns a
// DiscardReason; p is then partially filled and must not be used. It never
// allocates.
func (p *Packet) Unmarshal(b []byte) error {
	if len(b) < PacketLen {
		// 6.8.6: "If the Length field is less than the minimum correct
		// value (24 if the A bit is clear ...), the packet MUST be
		// discarded." A datagram shorter than that cannot hold a valid one.
		return DiscardBadLength
	}
	p.Version = b[0] >> 5
	p.Diag = Diag(b[0] & 0x1f)
	p.State = State(b[1] >> 6)
	f := b[1]
	p.Poll = f&flagPoll != 0
	p.Final = f&flagFinal != 0
	p.ControlPlaneIndependent = f&flagCPI != 0
	p.AuthPresent = f&flagAuth != 0
	p.Demand = f&flagDemand != 0
	p.Multipoint = f&flagMultipoint != 0
	p.DetectMult = b[2]
	p.Length = b[3]
	p.MyDiscriminator = binary.BigEndian.Uint32(b[4:])
	p.YourDiscriminator = binary.BigEndian.Uint32(b[8:])
	p.DesiredMinTxUsec = binary.BigEndian.Uint32(b[12:])
	p.RequiredMinRxUsec = binary.BigEndian.Uint32(b[16:])
	p.RequiredMinEchoRxUsec = binary.BigEndian.Uint32(b[20:])
	return p.check(len(b))
}

// check applies the stateless reception checks of RFC 5880 section 6.8.6 in
// the order the RFC lists them.
func (p *Packet) check(payloadLen int) error {
	switch {
	// 6.8.6: "If the version number is not correct (1), the packet MUST be
	// discarded."
	case p.Version != Version:
		return DiscardBadVersion
	// 6.8.6: "If the Length field is less than the minimum correct value (24
	// if the A bit is clear, or 26 if the A bit is set), the packet MUST be
	// discarded."
	case p.Length < PacketLen, p.AuthPresent && p.Length < minAuthLen:
		return DiscardBadLength
	// 6.8.6: "If the Length field is greater than the payload of the
	// encapsulating protocol, the packet MUST be discarded."
	case int(p.Length) > payloadLen:
		return DiscardTruncated
	// 6.8.6: "If the Detect Mult field is zero, the packet MUST be
	// discarded."
	case p.DetectMult == 0:
		return DiscardZeroDetectMult
	// 6.8.6: "If the Multipoint (M) bit is nonzero, the packet MUST be
	// discarded."
	case p.Multipoint:
		return DiscardMultipoint
	// 6.8.6: "If the My Discriminator field is zero, the packet MUST be
	// discarded."
	case p.MyDiscriminator == 0:
		return DiscardZeroMyDiscriminator
	// 6.8.6: "If the Your Discriminator field is zero and the State field is
	// not Down or AdminDown, the packet MUST be discarded."
	case p.YourDiscriminator == 0 && p.State != StateDown && p.State != StateAdminDown:
		return DiscardZeroYourDiscriminator
	// 6.8.6: "If the A bit is set and no authentication is in use
	// (bfd.AuthType is zero), the packet MUST be discarded." Authentication
	// is never in use here, so the converse check (A clear while in use)
	// cannot trigger.
	case p.AuthPresent:
		return DiscardAuthNotSupported
	}
	return nil
}

// MarshalTo encodes p into b without an authentication section and returns
// the number of bytes written (PacketLen). Version and Length are written as
// 1 and 24 whatever p holds; the A bit is never set.
func (p *Packet) MarshalTo(b []byte) (int, error) {
	if len(b) < PacketLen {
		return 0, ErrShortBuffer
	}
	b[0] = Version<<5 | byte(p.Diag)&0x1f
	f := byte(p.State&3) << 6
	f |= flagIf(p.Poll, flagPoll) | flagIf(p.Final, flagFinal)
	f |= flagIf(p.ControlPlaneIndependent, flagCPI)
	f |= flagIf(p.Demand, flagDemand) | flagIf(p.Multipoint, flagMultipoint)
	b[1] = f
	b[2] = p.DetectMult
	b[3] = PacketLen
	binary.BigEndian.PutUint32(b[4:], p.MyDiscriminator)
	binary.BigEndian.PutUint32(b[8:], p.YourDiscriminator)
	binary.BigEndian.PutUint32(b[12:], p.DesiredMinTxUsec)
	binary.BigEndian.PutUint32(b[16:], p.RequiredMinRxUsec)
	binary.BigEndian.PutUint32(b[20:], p.RequiredMinEchoRxUsec)
	return PacketLen, nil
}

func flagIf(set bool, flag byte) byte {
	if set {
		return flag
	}
	return 0
}

// usec converts a duration to wire microseconds, saturating at the field's
// maximum.
func usec(d time.Duration) uint32 {
	u := d.Microseconds()
	switch {
	case u < 0:
		return 0
	case u > maxIntervalUsec:
		return maxIntervalUsec
	}
	return uint32(u)
}

// fromUsec converts wire microseconds to a duration.
func fromUsec(u uint32) time.Duration { return time.Duration(u) * time.Microsecond }
