package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// HostLink is the name, inside a node, of the veth end ConnectHost makes.
const HostLink = "host"

// ConnectHost links the calling process's own network namespace (the host's,
// for a test) to node with a veth pair: hostIf carries hostAddr on this side,
// HostLink carries nodeAddr in node; both ends are up. Use a private
// test-only prefix for the two addresses (e.g. a /30 of 198.18.0.0/15) and
// a unique hostIf (at most 15 bytes). The caller removes the pair with
// DisconnectHost; deleting node's namespace (Close) removes it as well. On
// error nothing is left behind.
func (l *Lab) ConnectHost(ctx context.Context, node, hostIf string, hostAddr, nodeAddr netip.Prefix) (err error) {
	if len(hostIf) > 15 {
		return fmt.Errorf("connect host to %s: interface name %q is longer than 15 bytes", node, hostIf)
	}
	if _, err := run(ctx, "ip", "link", "add", hostIf, "type", "veth", "peer", "name", HostLink, "netns", l.NS(node)); err != nil {
		return fmt.Errorf("connect host to %s: %w", node, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, DisconnectHost(context.WithoutCancel(ctx), hostIf))
		}
	}()
	steps := [][]string{
		{"ip", "addr", "add", hostAddr.String(), "dev", hostIf},
		{"ip", "link", "set", hostIf, "up"},
		{"ip", "-n", l.NS(node), "addr", "add", nodeAddr.String(), "dev", HostLink},
		{"ip", "-n", l.NS(node), "link", "set", HostLink, "up"},
	}
	if hostAddr.Addr().Is6() {
		steps[0] = append(steps[0], "nodad")
		steps[2] = append(steps[2], "nodad")
	}
	for _, s := range steps {
		if _, err := run(ctx, s[0], s[1:]...); err != nil {
			return fmt.Errorf("connect host to %s: %w", node, err)
		}
	}
	return nil
}

// DisconnectHost deletes the veth pair ConnectHost made, by its host-side
// name; a pair already gone is no error.
func DisconnectHost(ctx context.Context, hostIf string) error {
	if _, err := net.InterfaceByName(hostIf); err != nil {
		return nil // gone (with its namespace, or never made)
	}
	if _, err := run(ctx, "ip", "link", "delete", hostIf); err != nil {
		return fmt.Errorf("disconnect host: %w", err)
	}
	return nil
}

// Trunk links the switch's bridge (GatewayLink or TargetLink) to hostBridge,
// a bridge in the calling process's network namespace (the host's), with a
// veth pair whose host end is hostPort (at most 15 bytes, unique on the
// host): what is on either bridge is on one Ethernet segment. Close removes
// the pair with the switch's namespace. On error nothing is left behind.
func (l *Lab) Trunk(ctx context.Context, bridge, hostBridge, hostPort string) (err error) {
	if bridge != GatewayLink && bridge != TargetLink {
		return fmt.Errorf("trunk: bridge %q, want %s or %s", bridge, GatewayLink, TargetLink)
	}
	if len(hostPort) > 15 {
		return fmt.Errorf("trunk %s: interface name %q is longer than 15 bytes", bridge, hostPort)
	}
	swPort := "trunk-" + bridge
	if len(swPort) > 15 {
		swPort = swPort[:15]
	}
	if _, err := run(ctx, "ip", "link", "add", hostPort, "type", "veth", "peer", "name", swPort, "netns", l.NS(SwitchNode)); err != nil {
		return fmt.Errorf("trunk %s to %s: %w", bridge, hostBridge, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, DisconnectHost(context.WithoutCancel(ctx), hostPort))
		}
	}()
	for _, s := range [][]string{
		{"ip", "link", "set", hostPort, "master", hostBridge, "up"},
		{"ip", "-n", l.NS(SwitchNode), "link", "set", swPort, "master", bridge, "up"},
	} {
		if _, err := run(ctx, s[0], s[1:]...); err != nil {
			return fmt.Errorf("trunk %s to %s: %w", bridge, hostBridge, err)
		}
	}
	return nil
}
