package lab

import (
	"context"
	"fmt"
	"net/netip"
)

// Node names (the last part of a namespace name).
const (
	ClientNode  = "cl"
	GatewayNode = "gw"
	SwitchNode  = "sw"
)

// Interface and bridge names, as in the seed's Gateway and GatewayRouter.
const (
	GatewayLink = "vlan-100" // LB and gateway side of the gateway network (and its bridge in sw)
	TargetLink  = "net1"     // LB and target side of the target network (and its bridge in sw)
	ClientLink  = "eth0"     // the client's interface towards the gateway
	GatewayToCl = "client"   // the gateway's interface towards the client
	// SourceTable is the routing table of the targets' "from VIP" rules.
	SourceTable = 100
)

// LBName returns the node name of LB i (1-based): "lb1", "lb2".
func LBName(i int) string { return fmt.Sprintf("lb%d", i) }

// TargetName returns the node name of target i (1-based): "t1", "t2", ...
func TargetName(i int) string { return fmt.Sprintf("t%d", i) }

// Addrs is one interface's IPv4 and IPv6 address with prefix length.
type Addrs struct {
	V4, V6 netip.Prefix
}

// For returns the address of the same family as a.
func (a Addrs) For(addr netip.Addr) netip.Addr {
	if addr.Is4() {
		return a.V4.Addr()
	}
	return a.V6.Addr()
}

func addrs(v4, v6 string) Addrs {
	return Addrs{V4: netip.MustParsePrefix(v4), V6: netip.MustParsePrefix(v6)}
}

// ClientAddrs is the client's address on eth0.
func ClientAddrs() Addrs { return addrs("10.100.0.2/24", "fd00:100::2/64") }

// GatewayClientSide is the gateway's address towards the client.
func GatewayClientSide() Addrs { return addrs("10.100.0.1/24", "fd00:100::1/64") }

// GatewayAddrs is the gateway's address on vlan-100 (the seed's GatewayRouter address).
func GatewayAddrs() Addrs { return addrs("169.254.100.150/24", "fd00:169::150/64") }

// LBGatewaySide is LB i's address on vlan-100.
func LBGatewaySide(i int) Addrs {
	return addrs(fmt.Sprintf("169.254.100.%d/24", i), fmt.Sprintf("fd00:169::%x/64", i))
}

// LBTargetSide is LB i's address on net1 (the targets' next hop back).
func LBTargetSide(i int) Addrs {
	return addrs(fmt.Sprintf("169.111.100.%d/24", i), fmt.Sprintf("fd00:111::%x/64", i))
}

// TargetAddrs is target i's address on net1 (host part 10+i in both families).
func TargetAddrs(i int) Addrs {
	return addrs(fmt.Sprintf("169.111.100.%d/24", 10+i), fmt.Sprintf("fd00:111::%d/64", 10+i))
}

// TargetSubnets are the target network's subnets (the Gateway's network-subnets).
func TargetSubnets() Addrs { return addrs("169.111.100.0/24", "fd00:111::/64") }

// nodes lists every node of the lab, switch first.
func (l *Lab) nodes() []string {
	n := []string{SwitchNode, GatewayNode, ClientNode}
	n = append(n, l.LBs()...)
	return append(n, l.Targets()...)
}

// build creates the namespaces, links, addresses and routes.
func (l *Lab) build(ctx context.Context) error {
	for _, node := range l.nodes() {
		if err := l.addNode(ctx, node); err != nil {
			return err
		}
	}
	for _, br := range []string{GatewayLink, TargetLink} {
		if err := ip(ctx, l.NS(SwitchNode), "link", "add", br, "type", "bridge", "mcast_snooping", "0"); err != nil {
			return fmt.Errorf("bridge %s: %w", br, err)
		}
		if err := ip(ctx, l.NS(SwitchNode), "link", "set", br, "up"); err != nil {
			return fmt.Errorf("bridge %s: %w", br, err)
		}
	}
	if l.opts.PointToPoint {
		if err := l.pair(ctx, GatewayNode, LBName(1), GatewayLink); err != nil {
			return err
		}
		if err := l.pair(ctx, LBName(1), TargetName(1), TargetLink); err != nil {
			return err
		}
	}
	steps := []func(context.Context) error{l.buildClient, l.buildGateway}
	for i := 1; i <= l.opts.LBs; i++ {
		steps = append(steps, func(ctx context.Context) error { return l.buildLB(ctx, i) })
	}
	for i := 1; i <= l.opts.Targets; i++ {
		steps = append(steps, func(ctx context.Context) error { return l.buildTarget(ctx, i) })
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// addNode creates a namespace with sysctls set before any interface exists,
// so every interface inherits them: no DAD, no reverse-path filter,
// forwarding on routers, multipath hashing on the 5-tuple.
func (l *Lab) addNode(ctx context.Context, node string) error {
	ns := l.NS(node)
	if err := addNetns(ctx, ns); err != nil {
		return err
	}
	l.mu.Lock()
	l.created = append(l.created, ns)
	l.mu.Unlock()
	settings := []string{
		"net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0",
		"net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
		// Custom multipath hash over addresses, protocol and ports: policy 1
		// (L4) would reuse the sending socket's random skb hash, which veth
		// carries across namespaces, so the same 5-tuple from a new socket
		// could take another path.
		"net.ipv4.fib_multipath_hash_policy=3", "net.ipv4.fib_multipath_hash_fields=0x0037",
		"net.ipv6.fib_multipath_hash_policy=3", "net.ipv6.fib_multipath_hash_fields=0x0037",
	}
	switch {
	case node == SwitchNode:
		settings = append(settings, "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	case node == GatewayNode || isLB(node):
		settings = append(settings, "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")
	case isTarget(node):
		// No per-destination limit on ICMP errors: the sctp probes' answers
		// are the targets' protocol unreachable and parameter problem
		// errors, all to the one client, several a second per VIP; the
		// default (one a second per destination after a small burst) would
		// turn probes into losses. Lab only: the global limit
		// (icmp_msgs_per_sec) still applies.
		settings = append(settings, "net.ipv4.icmp_ratelimit=0", "net.ipv6.icmp.ratelimit=0")
	}
	if err := sysctl(ctx, ns, settings...); err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	if err := ip(ctx, ns, "link", "set", "lo", "up"); err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	return nil
}

func isLB(node string) bool { return len(node) > 2 && node[:2] == "lb" }

func isTarget(node string) bool { return len(node) > 1 && node[0] == 't' }

// plug connects node's interface ifname to the switch's bridge through a veth
// pair whose switch end is named port, and brings both ends up. With
// Options.PointToPoint the interface exists already, a pair's end (build).
func (l *Lab) plug(ctx context.Context, node, ifname, bridge, port string) error {
	if l.opts.PointToPoint {
		return nil
	}
	sw := l.NS(SwitchNode)
	if err := ip(ctx, sw, "link", "add", port, "type", "veth", "peer", "name", ifname, "netns", l.NS(node)); err != nil {
		return fmt.Errorf("plug %s/%s: %w", node, ifname, err)
	}
	if err := ip(ctx, sw, "link", "set", port, "master", bridge, "up"); err != nil {
		return fmt.Errorf("plug %s/%s: %w", node, ifname, err)
	}
	return ip(ctx, l.NS(node), "link", "set", ifname, "up")
}

// pair links nodes a and b with a veth pair whose ends are both named
// ifname, and brings both up.
func (l *Lab) pair(ctx context.Context, a, b, ifname string) error {
	if err := ip(ctx, l.NS(a), "link", "add", ifname, "type", "veth", "peer", "name", ifname, "netns", l.NS(b)); err != nil {
		return fmt.Errorf("link %s-%s: %w", a, b, err)
	}
	for _, node := range []string{a, b} {
		if err := ip(ctx, l.NS(node), "link", "set", ifname, "up"); err != nil {
			return fmt.Errorf("link %s-%s: %w", a, b, err)
		}
	}
	return nil
}

// address adds both addresses of a to ifname in node (IPv6 without DAD).
func (l *Lab) address(ctx context.Context, node, ifname string, a Addrs) error {
	ns := l.NS(node)
	if err := ip(ctx, ns, "addr", "add", a.V4.String(), "dev", ifname); err != nil {
		return err
	}
	return ip(ctx, ns, "-6", "addr", "add", a.V6.String(), "dev", ifname, "nodad")
}

// defaultVia sets node's default routes.
func (l *Lab) defaultVia(ctx context.Context, node string, via Addrs) error {
	ns := l.NS(node)
	if err := ip(ctx, ns, "route", "replace", "default", "via", via.V4.Addr().String()); err != nil {
		return err
	}
	return ip(ctx, ns, "-6", "route", "replace", "default", "via", via.V6.Addr().String())
}

func (l *Lab) buildClient(ctx context.Context) error {
	gw := l.NS(GatewayNode)
	if err := ip(ctx, gw, "link", "add", GatewayToCl, "type", "veth", "peer", "name", ClientLink, "netns", l.NS(ClientNode)); err != nil {
		return fmt.Errorf("client link: %w", err)
	}
	for _, s := range []struct{ node, ifname string }{{GatewayNode, GatewayToCl}, {ClientNode, ClientLink}} {
		if err := ip(ctx, l.NS(s.node), "link", "set", s.ifname, "up"); err != nil {
			return fmt.Errorf("client link: %w", err)
		}
	}
	if err := l.address(ctx, ClientNode, ClientLink, ClientAddrs()); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if err := l.address(ctx, GatewayNode, GatewayToCl, GatewayClientSide()); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	if err := l.defaultVia(ctx, ClientNode, GatewayClientSide()); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	return nil
}

func (l *Lab) buildGateway(ctx context.Context) error {
	if err := l.plug(ctx, GatewayNode, GatewayLink, GatewayLink, "gw-v100"); err != nil {
		return err
	}
	if err := l.address(ctx, GatewayNode, GatewayLink, GatewayAddrs()); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	return nil
}

func (l *Lab) buildLB(ctx context.Context, i int) error {
	node := LBName(i)
	if err := l.plug(ctx, node, GatewayLink, GatewayLink, node+"-v100"); err != nil {
		return err
	}
	if err := l.plug(ctx, node, TargetLink, TargetLink, node+"-net1"); err != nil {
		return err
	}
	if err := l.address(ctx, node, GatewayLink, LBGatewaySide(i)); err != nil {
		return fmt.Errorf("%s: %w", node, err)
	}
	if err := l.address(ctx, node, TargetLink, LBTargetSide(i)); err != nil {
		return fmt.Errorf("%s: %w", node, err)
	}
	if err := l.defaultVia(ctx, node, GatewayAddrs()); err != nil {
		return fmt.Errorf("%s: %w", node, err)
	}
	return nil
}

func (l *Lab) buildTarget(ctx context.Context, i int) error {
	node, ns := TargetName(i), l.NS(TargetName(i))
	if err := l.plug(ctx, node, TargetLink, TargetLink, node+"-net1"); err != nil {
		return err
	}
	if err := l.address(ctx, node, TargetLink, TargetAddrs(i)); err != nil {
		return fmt.Errorf("%s: %w", node, err)
	}
	if l.opts.TargetsWithoutVIPs {
		if err := sysctl(ctx, ns, "net.ipv4.ip_nonlocal_bind=1", "net.ipv6.ip_nonlocal_bind=1"); err != nil {
			return fmt.Errorf("%s: %w", node, err)
		}
		return l.installBlastCounter(ctx, node)
	}
	for _, vip := range l.opts.VIPs {
		args := []string{"addr", "add", netip.PrefixFrom(vip, vip.BitLen()).String(), "dev", "lo"}
		if vip.Is6() {
			args = append([]string{"-6"}, append(args, "nodad")...)
		}
		if err := ip(ctx, ns, args...); err != nil {
			return fmt.Errorf("%s: VIP: %w", node, err)
		}
		if err := ip(ctx, ns, family(vip), "rule", "add", "from", vip.String(), "lookup", fmt.Sprint(SourceTable), "priority", "100"); err != nil {
			return fmt.Errorf("%s: source rule: %w", node, err)
		}
	}
	for _, fam := range []string{"-4", "-6"} {
		args := []string{fam, "route", "replace", "default", "table", fmt.Sprint(SourceTable)}
		if err := ip(ctx, ns, append(args, l.viaLBs(fam)...)...); err != nil {
			return fmt.Errorf("%s: source route: %w", node, err)
		}
	}
	return l.installBlastCounter(ctx, node)
}

// viaLBs returns the route arguments "via LB" or ECMP "nexthop via LB1 nexthop via LB2".
func (l *Lab) viaLBs(fam string) []string {
	hop := func(i int) string {
		if fam == "-4" {
			return LBTargetSide(i).V4.Addr().String()
		}
		return LBTargetSide(i).V6.Addr().String()
	}
	if l.opts.LBs == 1 {
		return []string{"via", hop(1), "dev", TargetLink}
	}
	var args []string
	for i := 1; i <= l.opts.LBs; i++ {
		args = append(args, "nexthop", "via", hop(i), "dev", TargetLink)
	}
	return args
}

func family(a netip.Addr) string {
	if a.Is4() {
		return "-4"
	}
	return "-6"
}
