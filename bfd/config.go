package bfd

import (
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// Defaults applied to zero fields of a SessionConfig (the common production
// setting, 300 ms x 3).
const (
	DefaultDesiredMinTx     = 300 * time.Millisecond
	DefaultRequiredMinRx    = 300 * time.Millisecond
	DefaultDetectMultiplier = 3
)

// UpSlack is how long past its detection time a caller waiting for a new
// session to come Up should allow: a session not Up sends at most once
// every slowTxInterval, so coming Up takes a second or two once both sides
// run theirs. The SLLBR's endpoint sessions and the target side's next-hop
// sessions both find a peer down that is not Up within Detection +
// UpSlack of being added.
const UpSlack = 3 * time.Second

// slowTxInterval is the minimum Desired Min TX Interval while a session is
// not Up (RFC 5880 section 6.8.3).
const slowTxInterval = time.Second

// SessionConfig describes one BFD session.
type SessionConfig struct {
	Peer             netip.Addr    // remote address (required)
	Local            netip.Addr    // source address; the kernel chooses when invalid
	Interface        string        // single hop: interface the peer is reached on
	DesiredMinTx     time.Duration // 0: DefaultDesiredMinTx
	RequiredMinRx    time.Duration // 0: DefaultRequiredMinRx
	DetectMultiplier uint8         // 0: DefaultDetectMultiplier
	Multihop         bool          // RFC 5883 (port 4784) instead of RFC 5881
}

// Key identifies a session within a Server.
type Key struct {
	Peer      netip.Addr
	Interface string
	Multihop  bool
}

func (k Key) String() string {
	s := k.Peer.String()
	if k.Interface != "" {
		s += "%" + k.Interface
	}
	if k.Multihop {
		s += "/multihop"
	}
	return s
}

// Key returns the key the Server files this session under.
func (c SessionConfig) Key() Key {
	return Key{Peer: c.Peer.Unmap().WithZone(""), Interface: c.Interface, Multihop: c.Multihop}
}

// withDefaults returns c with zero fields defaulted and addresses normalised.
func (c SessionConfig) withDefaults() SessionConfig {
	c.Peer = c.Peer.Unmap().WithZone("")
	c.Local = c.Local.Unmap().WithZone("")
	if c.DesiredMinTx == 0 {
		c.DesiredMinTx = DefaultDesiredMinTx
	}
	if c.RequiredMinRx == 0 {
		c.RequiredMinRx = DefaultRequiredMinRx
	}
	if c.DetectMultiplier == 0 {
		c.DetectMultiplier = DefaultDetectMultiplier
	}
	return c
}

// Validate reports whether c (after defaults) describes a usable session.
func (c SessionConfig) Validate() error {
	c = c.withDefaults()
	const maxInterval = maxIntervalUsec * time.Microsecond
	switch {
	case !c.Peer.IsValid() || c.Peer.IsUnspecified() || c.Peer.IsMulticast():
		return fmt.Errorf("bfd: invalid peer address %v", c.Peer)
	case c.Local.IsValid() && c.Local.Is4() != c.Peer.Is4():
		return fmt.Errorf("bfd: local %v and peer %v differ in family", c.Local, c.Peer)
	case !c.Multihop && c.Interface == "" && c.Peer.IsLinkLocalUnicast():
		return errors.New("bfd: a link-local peer needs an interface")
	case c.DesiredMinTx < time.Microsecond || c.DesiredMinTx > maxInterval:
		return fmt.Errorf("bfd: desired min tx %v out of range", c.DesiredMinTx)
	case c.RequiredMinRx < time.Microsecond || c.RequiredMinRx > maxInterval:
		return fmt.Errorf("bfd: required min rx %v out of range", c.RequiredMinRx)
	}
	return nil
}
