package lab

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// BIRDConfig is a DC-gateway BIRD 2 configuration like Meridio's test
// gateway: BGP to every LB (one session per LB and family), a default route
// exported to them, and their /32 and /128 VIP routes imported into the
// kernel with ECMP (merge paths).
type BIRDConfig struct {
	RouterID  netip.Addr    // default: the gateway's IPv4 address
	LocalAS   uint32        // default 4248829953
	PeerAS    uint32        // default 8103
	Port      uint16        // local and remote BGP port (default 10179)
	Neighbors []netip.Addr  // default: every LB's vlan-100 address, both families
	HoldTime  time.Duration // default 24 s (as in the seed's GatewayRouter)
	Interface string        // for BFD (default vlan-100)
	BFD       *BFDConfig    // nil: no BFD
	// BFDNeighbors get a BFD session without BGP (static gateways).
	BFDNeighbors []netip.Addr
	// BFDMultihop makes the BFDNeighbors' sessions multihop (RFC 5883),
	// from the gateway's address of their family.
	BFDMultihop bool
	// BGPWithoutBFD keeps BFD out of the BGP sessions (no "bfd on"): BFD
	// runs only for BFDNeighbors, so BIRD's BGP sessions see what the LB
	// does when its own BFD session goes down.
	BGPWithoutBFD bool
	// ErrorWait is BIRD's BGP "error wait time" (min, max): how long a
	// session stays idle after an error such as BFD down. BIRD's default,
	// 60 s to 300 s, bounds recovery after every link failure; the lab uses
	// 1 s to 10 s.
	ErrorWait [2]time.Duration
	// Node is the node bird runs in (default GatewayNode). Elsewhere, give
	// the sessions Multihop.
	Node string
	// Password is the TCP MD5 password (RFC 2385) of every BGP session.
	Password string
	// TTLSecurity turns on GTSM (RFC 5082) for every BGP session.
	TTLSecurity bool
	// Multihop > 0 makes the BGP sessions multihop with that many hops
	// (with TTLSecurity: accept TTL 256-Multihop and above) instead of
	// "direct".
	Multihop int
	// NoDefault exports nothing to the LBs (no default route).
	NoDefault bool
}

// BFDConfig are BFD timers (the seed: 300 ms x 5).
type BFDConfig struct {
	MinRx, MinTx time.Duration
	Multiplier   int
}

// DefaultBIRDConfig returns the configuration for this lab's LBs.
func (l *Lab) DefaultBIRDConfig() BIRDConfig {
	var c BIRDConfig
	for i := 1; i <= l.opts.LBs; i++ {
		c.Neighbors = append(c.Neighbors, LBGatewaySide(i).V4.Addr(), LBGatewaySide(i).V6.Addr())
	}
	return c.withDefaults()
}

func (c BIRDConfig) withDefaults() BIRDConfig {
	if !c.RouterID.IsValid() {
		c.RouterID = GatewayAddrs().V4.Addr()
	}
	if c.LocalAS == 0 {
		c.LocalAS = 4248829953
	}
	if c.PeerAS == 0 {
		c.PeerAS = 8103
	}
	if c.Port == 0 {
		c.Port = 10179
	}
	if c.HoldTime <= 0 {
		c.HoldTime = 24 * time.Second
	}
	if c.Interface == "" {
		c.Interface = GatewayLink
	}
	if c.Node == "" {
		c.Node = GatewayNode
	}
	if c.ErrorWait[0] <= 0 {
		c.ErrorWait = [2]time.Duration{time.Second, 10 * time.Second}
	}
	return c
}

// Render returns the BIRD 2 configuration text. Each neighbour's BGP
// protocol is named after its address ("nb_169_254_100_1",
// "nb_fd00_169__1"), see BIRDProtocolName.
func (c BIRDConfig) Render() string {
	c = c.withDefaults()
	var b strings.Builder
	fmt.Fprintf(&b, "log stderr all;\nrouter id %s;\n\nprotocol device {}\n\n", c.RouterID)
	for _, fam := range []struct{ name, def string }{{"ipv4", "0.0.0.0/0"}, {"ipv6", "::/0"}} {
		fmt.Fprintf(&b, "protocol kernel kernel_%[1]s {\n\t%[1]s { import none; export filter { if source = RTS_BGP then accept; reject; }; };\n\tmerge paths on;\n}\n\n", fam.name)
		fmt.Fprintf(&b, "protocol static default_%[1]s {\n\t%[1]s;\n\troute %[2]s blackhole;\n}\n\n", fam.name, fam.def)
	}
	if c.BFD != nil {
		timers := fmt.Sprintf("{\n\t\tmin rx interval %d ms;\n\t\tmin tx interval %d ms;\n\t\tmultiplier %d;\n\t}",
			c.BFD.MinRx.Milliseconds(), c.BFD.MinTx.Milliseconds(), c.BFD.Multiplier)
		fmt.Fprintf(&b, "protocol bfd {\n\tinterface %q %s;\n\tmultihop %s;\n", c.Interface, timers, timers)
		for _, n := range c.BFDNeighbors {
			if c.BFDMultihop {
				fmt.Fprintf(&b, "\tneighbor %s local %s multihop on;\n", n, GatewayAddrs().For(n))
			} else {
				fmt.Fprintf(&b, "\tneighbor %s dev %q;\n", n, c.Interface)
			}
		}
		b.WriteString("}\n\n")
	}
	for _, n := range c.Neighbors {
		c.renderNeighbor(&b, n)
	}
	return b.String()
}

func (c BIRDConfig) renderNeighbor(b *strings.Builder, n netip.Addr) {
	fam, hostLen, def := "ipv4", 32, "0.0.0.0/0"
	if n.Is6() {
		fam, hostLen, def = "ipv6", 128, "::/0"
	}
	fmt.Fprintf(b, "protocol bgp %s {\n", BIRDProtocolName(n))
	fmt.Fprintf(b, "\tlocal port %d as %d;\n\tneighbor %s port %d as %d;\n", c.Port, c.LocalAS, n, c.Port, c.PeerAS)
	if c.Multihop > 0 {
		fmt.Fprintf(b, "\tmultihop %d;\n", c.Multihop)
	} else {
		b.WriteString("\tdirect;\n")
	}
	if c.Password != "" {
		fmt.Fprintf(b, "\tpassword %q;\n", c.Password)
	}
	if c.TTLSecurity {
		b.WriteString("\tttl security on;\n")
	}
	fmt.Fprintf(b, "\thold time %d;\n\tgraceful restart off;\n\terror wait time %d, %d;\n",
		int(c.HoldTime.Seconds()), int(c.ErrorWait[0].Seconds()), int(c.ErrorWait[1].Seconds()))
	if c.BFD != nil && !c.BGPWithoutBFD {
		b.WriteString("\tbfd on;\n")
	}
	fmt.Fprintf(b, "\t%s {\n\t\timport filter { if net.len = %d then accept; reject; };\n", fam, hostLen)
	if c.NoDefault {
		b.WriteString("\t\texport none;\n\t};\n}\n\n")
		return
	}
	fmt.Fprintf(b, "\t\texport filter { if net = %s then accept; reject; };\n\t};\n}\n\n", def)
}

// BIRDProtocolName is the BGP protocol name of the neighbour at a.
func BIRDProtocolName(a netip.Addr) string {
	return "nb_" + strings.NewReplacer(".", "_", ":", "_").Replace(a.String())
}

// BIRD is a running bird daemon with its own control socket.
type BIRD struct {
	Process    *Process
	ConfigPath string
	Socket     string
}

// StartBIRD writes cfg and runs bird in cfg.Node (the gateway), in the
// foreground and killed by PID on Stop or lab Close. It returns once bird
// answers on its control socket (at most 10 s).
func (l *Lab) StartBIRD(ctx context.Context, cfg BIRDConfig) (*BIRD, error) {
	dir, err := os.MkdirTemp(l.tmp, "bird-")
	if err != nil {
		return nil, fmt.Errorf("lab: bird: %w", err)
	}
	b := &BIRD{ConfigPath: filepath.Join(dir, "bird.conf"), Socket: filepath.Join(dir, "bird.ctl")}
	if err := os.WriteFile(b.ConfigPath, []byte(cfg.Render()), 0o644); err != nil {
		return nil, fmt.Errorf("lab: bird: %w", err)
	}
	if _, err := run(ctx, "bird", "-p", "-c", b.ConfigPath); err != nil {
		return nil, fmt.Errorf("lab: bird config: %w", err)
	}
	b.Process, err = l.Start(cfg.withDefaults().Node, "bird-"+filepath.Base(dir), "bird", "-f", "-c", b.ConfigPath, "-s", b.Socket)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := b.Birdc(ctx, "show", "status")
		if err == nil && strings.Contains(out, "Daemon is up and running") {
			return b, nil
		}
		select {
		case <-b.Process.Done():
			return nil, fmt.Errorf("lab: bird exited (log %s)", b.Process.LogPath)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Stop()
			return nil, fmt.Errorf("lab: bird not up within 10 s: %v %s", err, out)
		}
	}
}

// Birdc runs a birdc command against this daemon's control socket.
func (b *BIRD) Birdc(ctx context.Context, args ...string) (string, error) {
	return run(ctx, "birdc", append([]string{"-s", b.Socket}, args...)...)
}

// Stop stops bird (SIGTERM, then SIGKILL).
func (b *BIRD) Stop() error { return b.Process.Stop() }
