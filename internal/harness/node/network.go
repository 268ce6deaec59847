package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// ipCmd runs ip(8) and returns its error with its output.
func ipCmd(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

func linkExists(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

// addBridges creates the node's bridges in the host's network namespace.
// Only the pod network's bridge has an address (NodeIP); the others carry
// the secondary networks without the host taking part (no address, IPv6
// off on the bridge itself).
func addBridges(ctx context.Context) error {
	for _, nw := range Networks() {
		if linkExists(nw.Bridge) {
			return fmt.Errorf("bridge %s exists already (a node not taken down? make node-down)", nw.Bridge)
		}
		if err := ipCmd(ctx, "link", "add", "name", nw.Bridge, "type", "bridge", "mcast_snooping", "0"); err != nil {
			return err
		}
		if nw.NAD != "" {
			if err := writeSysctl("net/ipv6/conf/"+nw.Bridge+"/disable_ipv6", "1"); err != nil {
				return err
			}
		}
		if err := ipCmd(ctx, "link", "set", nw.Bridge, "up"); err != nil {
			return err
		}
	}
	bits := PodNetwork.Subnets[0].Bits()
	return ipCmd(ctx, "addr", "add", fmt.Sprintf("%s/%d", NodeIP, bits), "dev", PodNetwork.Bridge)
}

// deleteBridges removes the node's bridges; a missing one is no error.
func deleteBridges(ctx context.Context) error {
	var errs []error
	for _, nw := range Networks() {
		if !linkExists(nw.Bridge) {
			continue
		}
		if err := ipCmd(ctx, "link", "del", nw.Bridge); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func writeSysctl(key, value string) error {
	if err := os.WriteFile("/proc/sys/"+key, []byte(value), 0o644); err != nil {
		return fmt.Errorf("sysctl %s=%s: %w", strings.ReplaceAll(key, "/", "."), value, err)
	}
	return nil
}

// deleteKubeProxyTables removes what kube-proxy's nftables proxier left.
func deleteKubeProxyTables(ctx context.Context) error {
	var errs []error
	for _, fam := range []string{"ip", "ip6"} {
		if exec.CommandContext(ctx, "nft", "list", "table", fam, "kube-proxy").Run() != nil {
			continue // absent
		}
		if out, err := exec.CommandContext(ctx, "nft", "delete", "table", fam, "kube-proxy").CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("nft delete table %s kube-proxy: %w: %s", fam, err, bytes.TrimSpace(out)))
		}
	}
	return errors.Join(errs...)
}

// deleteKubeletChains removes the iptables chains the kubelet makes in the
// host's tables (KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT)
// and the rules that jump to them; nothing else of those tables.
func deleteKubeletChains(ctx context.Context) error {
	var errs []error
	for _, bin := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(bin); err != nil {
			continue // no iptables: the kubelet made no chain either
		}
		for _, table := range []string{"filter", "nat", "mangle"} {
			out, err := exec.CommandContext(ctx, bin, "-w", "-t", table, "-S").Output()
			if err != nil {
				continue // the table does not exist
			}
			var chains []string
			for _, line := range strings.Split(string(out), "\n") {
				f := strings.Fields(line)
				switch {
				case len(f) == 2 && f[0] == "-N" && strings.HasPrefix(f[1], "KUBE-"):
					chains = append(chains, f[1])
				case len(f) > 3 && f[0] == "-A" && !strings.HasPrefix(f[1], "KUBE-") && slices.Contains(f, "-j") &&
					strings.HasPrefix(f[slices.Index(f, "-j")+1], "KUBE-"):
					args := append([]string{"-w", "-t", table, "-D"}, f[1:]...)
					if out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err != nil {
						errs = append(errs, fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, bytes.TrimSpace(out)))
					}
				}
			}
			for _, verb := range []string{"-F", "-X"} {
				for _, c := range chains {
					if out, err := exec.CommandContext(ctx, bin, "-w", "-t", table, verb, c).CombinedOutput(); err != nil {
						errs = append(errs, fmt.Errorf("%s -t %s %s %s: %w: %s", bin, table, verb, c, err, bytes.TrimSpace(out)))
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}
