package liveness

import (
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// Bounds the prober accepts (kube/translate enforces the annotation's
// narrower bounds); they keep a bad Target from turning the prober into a
// busy loop or overflowing a Duration.
const (
	MinInterval   = 10 * time.Millisecond
	MaxInterval   = time.Hour
	MaxMultiplier = 1000
	MaxHoldDown   = 24 * time.Hour
)

// Config is how one address is probed. Interval 0: not probed.
type Config struct {
	Interval   time.Duration // between two probes of the address
	Multiplier int           // consecutive intervals without a valid reply before it is dead
	HoldDown   time.Duration // how long replies must keep coming before a dead address is alive; 0: the first reply
}

// Off reports whether the address is not probed (Interval 0).
func (c Config) Off() bool { return c.Interval == 0 }

// Detection is Interval × Multiplier: a target that stops answering is dead
// between Detection and Detection + Interval after its last reply.
func (c Config) Detection() time.Duration { return c.Interval * time.Duration(c.Multiplier) }

// Validate reports why a Config that is not Off cannot be probed.
func (c Config) Validate() error {
	switch {
	case c.Off():
		return nil
	case c.Interval < MinInterval || c.Interval > MaxInterval:
		return fmt.Errorf("interval %v out of range [%v, %v]", c.Interval, MinInterval, MaxInterval)
	case c.Multiplier < 1 || c.Multiplier > MaxMultiplier:
		return fmt.Errorf("multiplier %d out of range [1, %d]", c.Multiplier, MaxMultiplier)
	case c.HoldDown < 0 || c.HoldDown > MaxHoldDown:
		return fmt.Errorf("hold-down %v out of range [0, %v]", c.HoldDown, MaxHoldDown)
	}
	return nil
}

// Stricter reports whether c detects a dead address sooner than o, the rule
// by which callers merge the Configs of Services sharing an address: any
// probed Config is stricter than an Off one; then the shorter Detection,
// then the shorter Interval, then the longer HoldDown (the more cautious
// return) wins. It is a strict order on the three fields.
func (c Config) Stricter(o Config) bool {
	switch {
	case c.Off() || o.Off():
		return !c.Off() && o.Off()
	case c.Detection() != o.Detection():
		return c.Detection() < o.Detection()
	case c.Interval != o.Interval:
		return c.Interval < o.Interval
	}
	return c.HoldDown > o.HoldDown
}

// Target is one endpoint address to probe. The caller merges the Services
// that list an address into one Target (Config.Stricter).
type Target struct {
	Addr   netip.Addr
	Config Config
}

var errAddr = errors.New("not a unicast address without a zone")

// normalize returns the address the prober keys t by (IPv4-mapped IPv6
// addresses become IPv4) and whether it can be probed.
func (t Target) normalize() (Target, error) {
	t.Addr = t.Addr.Unmap()
	a := t.Addr
	if !a.IsValid() || a.Zone() != "" || a.IsUnspecified() || a.IsMulticast() ||
		(a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255})) {
		return t, fmt.Errorf("address %v: %w", a, errAddr)
	}
	if err := t.Config.Validate(); err != nil {
		return t, fmt.Errorf("address %v: %w", a, err)
	}
	return t, nil
}
