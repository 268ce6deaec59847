package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/maglev"
)

// The nftables floor is the least an nftables Maglev decision can do, the
// mechanism issue 12 prescribes with none of sllbrd's own rules: one rule in
// prerouting (inet family, raw priority) that matches the VIP, UDP and the
// blast port and sets the fwmark that "jhash <addresses . ports> mod M seed
// maglev.FlowSeed" selects in a map of M = maglev.MinSize entries (a Maglev
// table of the targets' marks, built by package maglev), and policy
// routing from each mark to a table with a default route via its target.
// It has no VIP dispatch map, no fragment or ICMP split, no route
// precedence and no counters, so it bounds from above the share of plain
// forwarding any ruleset of this mechanism can reach. The bench programs
// it by hand in lb1 (nft -f, ip -batch); sllbrd does not run.
const (
	floorTableName = "sllbrd-floor"
	floorMark      = 0x10000 // the first target's mark; the others follow
	floorRouteBase = 65536   // the first target's routing table
	floorRulePref  = 10000
)

// floorTable is the floor's Maglev table: n targets, all of them active.
func floorTable(n int) (*maglev.Table, error) {
	active := make([]bool, n)
	for i := range active {
		active[i] = true
	}
	t, err := maglev.Build(n, active)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	return t, nil
}

// floorRuleset is the floor's nft script for traffic to vip's port spread
// over targets (their addresses, in mark order) by the Maglev table t.
func floorRuleset(vip netip.Addr, port uint16, t *maglev.Table, targets int) (string, error) {
	if t.Slots() != targets {
		return "", fmt.Errorf("floor: a Maglev table of %d slots for %d targets", t.Slots(), targets)
	}
	daddr, addresses := "ip daddr", "@nh,96,64" // IPv4 source and destination
	if vip.Is6() {
		daddr, addresses = "ip6 daddr", "@nh,64,256"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n", floorTableName)
	fmt.Fprintf(&b, "\tmap maglev {\n\t\ttypeof numgen inc mod 2 : meta mark\n\t\tsize %d\n\t\telements = { ", t.Size())
	for i, slot := range t.AppendEntrySlots(nil) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d : %#x", i, floorMark+int(slot))
	}
	b.WriteString(" }\n\t}\n")
	fmt.Fprintf(&b, "\tchain prerouting {\n\t\ttype filter hook prerouting priority raw; policy accept;\n")
	fmt.Fprintf(&b, "\t\t%s %s udp dport %d meta mark set jhash %s . @th,0,32 mod %d seed %#x map @maglev\n\t}\n}\n",
		daddr, vip, port, addresses, t.Size(), maglev.FlowSeed)
	return b.String(), nil
}

// floorRoutes are the floor's policy rules and routes for vip's family,
// the input of "ip -batch" (verb "add", or "del" to remove them): target
// i's mark leads to its table, whose default route goes via the target.
func floorRoutes(verb string, vip netip.Addr, targets int) string {
	var b strings.Builder
	for i := 0; i < targets; i++ {
		table := floorRouteBase + i
		fmt.Fprintf(&b, "rule %s pref %d fwmark %#x lookup %d\n", verb, floorRulePref, floorMark+i, table)
		if verb == "add" {
			fmt.Fprintf(&b, "route replace default via %s dev %s table %d\n", lab.TargetAddrs(i+1).For(vip), lab.TargetLink, table)
		} else {
			fmt.Fprintf(&b, "route flush table %d\n", table)
		}
	}
	return b.String()
}

// ipFamily is ip(8)'s option for addr's family.
func ipFamily(addr netip.Addr) string {
	if addr.Is6() {
		return "-6"
	}
	return "-4"
}

// withFloor programs the floor in lb1, routes the VIPs to lb1 and runs fn.
// lb1 has no other route to the VIP, so a blast arrives only if the floor
// decided it; the warm-up checks that every target receives some. The
// floor is removed afterwards.
func (b *bench) withFloor(ctx context.Context, fn func() error) (err error) {
	n := b.lab.Options().Targets
	t, err := floorTable(n)
	if err != nil {
		return err
	}
	script, err := floorRuleset(b.vip, b.lab.Options().BlastPort, t, n)
	if err != nil {
		return err
	}
	path := filepath.Join(b.manifests, "floor.nft")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	defer os.Remove(path)
	lb := lab.LBName(1)
	if out, err := b.lab.ExecInput(ctx, lb, floorRoutes("add", b.vip, n), "ip", ipFamily(b.vip), "-batch", "-"); err != nil {
		return fmt.Errorf("floor: policy routing in %s: %w: %s", lb, err, out)
	}
	defer func() {
		out, rerr := b.lab.ExecInput(ctx, lb, floorRoutes("del", b.vip, n), "ip", ipFamily(b.vip), "-batch", "-")
		if rerr == nil {
			out, rerr = b.lab.Exec(ctx, lb, "nft", "delete", "table", "inet", floorTableName)
		}
		if err == nil && rerr != nil {
			err = fmt.Errorf("floor: remove from %s: %w: %s", lb, rerr, out)
		}
	}()
	if out, err := b.lab.Exec(ctx, lb, "nft", "-f", path); err != nil {
		return fmt.Errorf("floor: nft -f in %s: %w: %s", lb, err, out)
	}
	if err := b.lab.RouteVIPsVia(ctx, 1); err != nil {
		return err
	}
	before, err := b.lab.BlastReceived(ctx)
	if err != nil {
		return err
	}
	if err := b.warmUp(ctx, b.lab); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	after, err := b.lab.BlastReceived(ctx)
	if err != nil {
		return err
	}
	for target, n := range after {
		if n == before[target] {
			return fmt.Errorf("floor: the warm-up reached no packet to %s: the Maglev map does not spread the flows", target)
		}
	}
	return fn()
}
