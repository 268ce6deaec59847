package lab

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
)

// vipTable is the nftables table of the VIP counters (never sllbrd's own).
const vipTable = "sllbrd_vips"

// VIPTraffic counts, in one LB, the packets it forwarded to VIPs (client
// to target) and from VIPs (target replies), per family: proof, in the
// kernel, that both directions go through that LB.
type VIPTraffic struct {
	ToVIP4, ToVIP6, FromVIP4, FromVIP6 uint64
}

func (v VIPTraffic) String() string {
	return fmt.Sprintf("to VIPs %d+%d, from VIPs %d+%d (IPv4+IPv6)", v.ToVIP4, v.ToVIP6, v.FromVIP4, v.FromVIP6)
}

// Sub returns v - o, counter by counter.
func (v VIPTraffic) Sub(o VIPTraffic) VIPTraffic {
	return VIPTraffic{v.ToVIP4 - o.ToVIP4, v.ToVIP6 - o.ToVIP6, v.FromVIP4 - o.FromVIP4, v.FromVIP6 - o.FromVIP6}
}

// InstallVIPCounters adds counters to node (an LB) at the forward hook:
// packets forwarded with one of vips as destination, and as source.
func (l *Lab) InstallVIPCounters(ctx context.Context, node string, vips []netip.Addr) error {
	var v4, v6 []string
	for _, v := range vips {
		if v.Is4() {
			v4 = append(v4, v.String())
		} else {
			v6 = append(v6, v.String())
		}
	}
	if len(v4) == 0 || len(v6) == 0 {
		return fmt.Errorf("%s: VIP counters need VIPs of both families: %v", node, vips)
	}
	t := vipTable
	rules := []string{
		"add table inet " + t,
		"add chain inet " + t + " fw { type filter hook forward priority filter; policy accept; }",
	}
	for _, c := range []string{"to4", "to6", "from4", "from6"} {
		rules = append(rules, fmt.Sprintf("add counter inet %s %s", t, c))
	}
	set4, set6 := "{ "+strings.Join(v4, ", ")+" }", "{ "+strings.Join(v6, ", ")+" }"
	rules = append(rules,
		fmt.Sprintf("add rule inet %s fw ip daddr %s counter name to4", t, set4),
		fmt.Sprintf("add rule inet %s fw ip6 daddr %s counter name to6", t, set6),
		fmt.Sprintf("add rule inet %s fw ip saddr %s counter name from4", t, set4),
		fmt.Sprintf("add rule inet %s fw ip6 saddr %s counter name from6", t, set6),
	)
	if _, err := l.Exec(ctx, node, "nft", strings.Join(rules, "; ")); err != nil {
		return fmt.Errorf("%s: VIP counters: %w", node, err)
	}
	return nil
}

// ReadVIPCounters reads the counters InstallVIPCounters added to node.
func (l *Lab) ReadVIPCounters(ctx context.Context, node string) (VIPTraffic, error) {
	js, err := l.Exec(ctx, node, "nft", "-j", "list", "counters", "table", "inet", vipTable)
	if err != nil {
		return VIPTraffic{}, fmt.Errorf("%s: VIP counters: %w", node, err)
	}
	c, err := parseNftCounters(js)
	if err != nil {
		return VIPTraffic{}, fmt.Errorf("%s: VIP counters: %w", node, err)
	}
	for _, n := range []string{"to4", "to6", "from4", "from6"} {
		if _, ok := c[n]; !ok {
			return VIPTraffic{}, fmt.Errorf("%s: VIP counters: counter %s missing", node, n)
		}
	}
	return VIPTraffic{ToVIP4: c["to4"], ToVIP6: c["to6"], FromVIP4: c["from4"], FromVIP6: c["from6"]}, nil
}
