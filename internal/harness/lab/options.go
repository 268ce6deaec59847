package lab

import (
	"fmt"
	"net/netip"
)

// Logger receives progress messages; testing.TB satisfies it.
type Logger interface {
	Logf(format string, args ...any)
}

type discard struct{}

func (discard) Logf(string, ...any) {}

// Options describe the lab to build; zero values take the defaults.
type Options struct {
	LBs     int          // 1..3 (default 1)
	Targets int          // 1..50 (default 3)
	VIPs    []netip.Addr // default DefaultVIPs
	// UDPPorts and TCPPorts are the ports the responders serve on every VIP
	// (default DefaultPorts).
	UDPPorts []uint16
	TCPPorts []uint16
	// EchoPorts are TCP ports of long-lived echo connections on every VIP
	// (see Streams; default none).
	EchoPorts []uint16
	// TargetsWithoutVIPs builds the targets with their net1 address only:
	// no VIP on lo and no source routes ("sllbrd target" configures them
	// from the pod annotation). Their responders bind the VIPs anyway
	// (ip_nonlocal_bind) and answer once the VIPs are local.
	TargetsWithoutVIPs bool
	// BlastPort is the UDP port the packet blaster sends to; targets count
	// and drop those packets before any socket sees them (default 6000).
	BlastPort uint16
	// ResponderBinary is the labresponder executable; empty builds it with
	// `go build` into the lab's temporary directory.
	ResponderBinary string
	// NoResponders skips starting the responder processes.
	NoResponders bool
	// Detach leaves the lab's processes running when the creating process
	// dies (labctl up -detach); by default they get SIGKILL then.
	Detach bool
	// GatewayOnly builds the switch, the gateway and the client only: no
	// LB, no target, no responder. The LBs and targets are elsewhere, on
	// bridges Trunk links to the switch's (pods on a Kubernetes node).
	// LBs and Targets must be 0.
	GatewayOnly bool
	// PointToPoint links the gateway straight to lb1 and lb1 straight to
	// t1, each with a veth pair of its own (no switch, no bridge on the
	// path), for benchmarks where the LB must be the bottleneck: LBs and
	// Targets must be 1 (0 means 1). The addresses are the same as with
	// the bridges.
	PointToPoint bool
	// RunID overrides the random run id (letters and digits, at most 8).
	RunID  string
	Logger Logger
}

// DefaultVIPs are the VIPs of the seed's examples.
var DefaultVIPs = []netip.Addr{
	netip.MustParseAddr("20.0.0.1"), netip.MustParseAddr("20.0.0.2"),
	netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2"),
}

// DefaultPorts are the ports the responders serve by default: 80 and 5000-5010.
var DefaultPorts = []uint16{80, 5000, 5001, 5002, 5003, 5004, 5005, 5006, 5007, 5008, 5009, 5010}

const (
	maxLBs           = 3
	maxTargets       = 50
	defaultBlastPort = 6000
)

func (o Options) withDefaults() (Options, error) {
	switch {
	case o.GatewayOnly && (o.LBs != 0 || o.Targets != 0):
		return o, fmt.Errorf("lab: GatewayOnly with %d LBs and %d targets, want none", o.LBs, o.Targets)
	case o.GatewayOnly:
	case o.PointToPoint && (o.LBs < 0 || o.LBs > 1 || o.Targets < 0 || o.Targets > 1):
		return o, fmt.Errorf("lab: PointToPoint with %d LBs and %d targets, want 1 of each", o.LBs, o.Targets)
	case o.PointToPoint:
		o.LBs, o.Targets = 1, 1
	default:
		if o.LBs == 0 {
			o.LBs = 1
		}
		if o.Targets == 0 {
			o.Targets = 3
		}
		if o.LBs < 1 || o.LBs > maxLBs {
			return o, fmt.Errorf("lab: LBs = %d, want 1..%d", o.LBs, maxLBs)
		}
		if o.Targets < 1 || o.Targets > maxTargets {
			return o, fmt.Errorf("lab: Targets = %d, want 1..%d", o.Targets, maxTargets)
		}
	}
	if len(o.VIPs) == 0 {
		o.VIPs = DefaultVIPs
	}
	for _, v := range o.VIPs {
		if !v.IsValid() || v.Is4In6() {
			return o, fmt.Errorf("lab: bad VIP %v", v)
		}
	}
	if o.UDPPorts == nil {
		o.UDPPorts = DefaultPorts
	}
	if o.TCPPorts == nil {
		o.TCPPorts = DefaultPorts
	}
	if o.BlastPort == 0 {
		o.BlastPort = defaultBlastPort
	}
	if o.Logger == nil {
		o.Logger = discard{}
	}
	if o.RunID != "" && !validRunID(o.RunID) {
		return o, fmt.Errorf("lab: run id %q: want 1-8 letters or digits", o.RunID)
	}
	return o, nil
}

func validRunID(s string) bool {
	if len(s) == 0 || len(s) > 8 {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}
