package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
)

// Management network: a bridge in the switch namespace joining the calling
// process's namespace (the host's, for a test) with several nodes, the way
// the pod network joins pods to the API server in a cluster.
const (
	// MgmtBridge is the bridge in the switch namespace.
	MgmtBridge = "mgmt"
	// MgmtLink is the interface name, inside each node, on the bridge.
	MgmtLink = "mgmt"
)

// ConnectManagement plugs the host (hostIf, a unique name of at most 15
// bytes) and each of nodes into one bridge of the switch namespace, on
// subnet (an IPv4 /24 or larger, private to the test, e.g. of
// 198.18.0.0/15): the host gets its first address, the nodes the next ones
// in order. It returns the host's address and each node's. Remove the
// host's end with DisconnectHost; Close removes the rest. On error nothing
// is left on the host.
func (l *Lab) ConnectManagement(ctx context.Context, hostIf string, subnet netip.Prefix, nodes ...string) (host netip.Addr, addrs map[string]netip.Addr, err error) {
	if len(hostIf) > 15 {
		return host, nil, fmt.Errorf("management: interface name %q is longer than 15 bytes", hostIf)
	}
	if !subnet.Addr().Is4() || subnet.Bits() > 24 {
		return host, nil, fmt.Errorf("management: subnet %v: want IPv4, /24 or larger", subnet)
	}
	sw := l.NS(SwitchNode)
	if err := ip(ctx, sw, "link", "add", MgmtBridge, "type", "bridge"); err != nil {
		return host, nil, fmt.Errorf("management bridge: %w", err)
	}
	if err := ip(ctx, sw, "link", "set", MgmtBridge, "up"); err != nil {
		return host, nil, fmt.Errorf("management bridge: %w", err)
	}
	host = subnet.Masked().Addr().Next()
	if _, err := run(ctx, "ip", "link", "add", hostIf, "type", "veth", "peer", "name", "mgmt-host", "netns", sw); err != nil {
		return host, nil, fmt.Errorf("management: host link: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, DisconnectHost(context.WithoutCancel(ctx), hostIf))
		}
	}()
	steps := [][]string{
		{"ip", "addr", "add", netip.PrefixFrom(host, subnet.Bits()).String(), "dev", hostIf},
		{"ip", "link", "set", hostIf, "up"},
		{"ip", "-n", sw, "link", "set", "mgmt-host", "master", MgmtBridge, "up"},
	}
	for _, s := range steps {
		if _, err := run(ctx, s[0], s[1:]...); err != nil {
			return host, nil, fmt.Errorf("management: host link: %w", err)
		}
	}
	addrs = map[string]netip.Addr{}
	next := host
	for _, node := range nodes {
		next = next.Next()
		if !subnet.Contains(next) {
			return host, nil, fmt.Errorf("management: subnet %v too small for %d nodes", subnet, len(nodes))
		}
		if err := l.plug(ctx, node, MgmtLink, MgmtBridge, "mgmt-"+node); err != nil {
			return host, nil, err
		}
		if err := ip(ctx, l.NS(node), "addr", "add", netip.PrefixFrom(next, subnet.Bits()).String(), "dev", MgmtLink); err != nil {
			return host, nil, fmt.Errorf("management: %s: %w", node, err)
		}
		addrs[node] = next
	}
	return host, addrs, nil
}
