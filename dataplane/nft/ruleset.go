package nft

import (
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"golang.org/x/sys/unix"
)

// layoutVersion changes whenever the chains or rules built here change, so
// that a table left by an older version is rebuilt rather than patched.
const layoutVersion = 2

// Names of the objects in our table.
const (
	DefaultTableName = "sllbrd"
	SetVIPs4         = "vips4"
	SetVIPs6         = "vips6"
	ChainPrerouting  = "prerouting"
	ChainOutput      = "output"
	ChainPMTU        = "pmtu"
)

// Priority is the hook priority of all our chains (raw, -300); see doc.go.
const Priority = -300

// chainSpec is a chain and its rules, each rule identified by a comment.
type chainSpec struct {
	chain *nftables.Chain
	rules []ruleSpec
}

type ruleSpec struct {
	name  string
	exprs func(s *layout) []expr.Any
}

// layout is the complete desired table.
type layout struct {
	table      *nftables.Table
	set4, set6 *nftables.Set
	chains     []chainSpec
	mode       QueueMode
	cfg        Config
}

func newLayout(tableName string, mode QueueMode, cfg Config) *layout {
	t := &nftables.Table{Name: tableName, Family: nftables.TableFamilyINet}
	prio := nftables.ChainPriorityRef(Priority)
	l := &layout{
		table: t, mode: mode, cfg: cfg,
		set4: &nftables.Set{Table: t, Name: SetVIPs4, KeyType: nftables.TypeIPAddr},
		set6: &nftables.Set{Table: t, Name: SetVIPs6, KeyType: nftables.TypeIP6Addr},
	}
	prerouting := []ruleSpec{{"vip4-queue", (*layout).vip4Queue}, {"vip6-queue", (*layout).vip6Queue}}
	if cfg.Kernel != nil {
		// Fragments to the queue, then the kernel's decision, then
		// whatever the kernel did not decide to the queue.
		prerouting = []ruleSpec{{"vip4-kernel", (*layout).vip4Kernel}, {"vip4-queue", (*layout).vip4Queue},
			{"vip6-kernel", (*layout).vip6Kernel}, {"vip6-queue", (*layout).vip6Queue}}
	}
	l.chains = []chainSpec{
		{chain: &nftables.Chain{Name: ChainPrerouting, Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookPrerouting, Priority: prio},
			rules: prerouting},
		{chain: &nftables.Chain{Name: ChainOutput, Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookOutput, Priority: prio},
			rules: []ruleSpec{
				{"icmp-unreach-queue", func(l *layout) []expr.Any { return l.icmpErrorQueue(icmpDestUnreachable) }},
				{"icmp-timex-queue", func(l *layout) []expr.Any { return l.icmpErrorQueue(icmpTimeExceeded) }},
				{"icmp6-error-queue", (*layout).icmp6ErrorQueue},
			}},
		{chain: &nftables.Chain{Name: ChainPMTU, Table: t, Type: nftables.ChainTypeRoute,
			Hooknum: nftables.ChainHookOutput, Priority: prio},
			rules: []ruleSpec{{"fragneeded-vip-source", (*layout).fragNeededFromVIP},
				{"toobig-vip-source", (*layout).packetTooBigFromVIP}}},
	}
	return l
}

// comment is the rule's identity: layout version, rule name and every
// setting that is encoded in the rule.
func (l *layout) comment(rule string) string {
	fan := ""
	if l.cfg.Fanout {
		fan = " fanout"
	}
	return fmt.Sprintf("sllbrd/%d %s %s q%d+%d%s", layoutVersion, rule, l.mode,
		l.cfg.Queues.First, l.cfg.Queues.Count, fan)
}

func (l *layout) queue() expr.Any { return queueExpr(l.mode, l.cfg.Queues, l.cfg.Fanout) }

func (l *layout) vip4Queue() []expr.Any {
	return concat(matchNFProto(afInet),
		inSet(expr.PayloadBaseNetworkHeader, ipv4DaddrOff, 4, l.set4, false),
		[]expr.Any{&expr.Counter{}, l.queue()})
}

func (l *layout) vip6Queue() []expr.Any {
	return concat(matchNFProto(afInet6),
		inSet(expr.PayloadBaseNetworkHeader, ipv6DaddrOff, 16, l.set6, false),
		[]expr.Any{&expr.Counter{}, l.queue()})
}

// vip4Kernel: meta nfproto ipv4 ip daddr vmap @dispatch4: a VIP the kernel
// decides jumps to its chain (which leaves fragments and whatever else it
// does not decide alone); when that chain gives no verdict, the packet
// comes back and the next rule queues it.
func (l *layout) vip4Kernel() []expr.Any {
	return concat(matchNFProto(afInet), []expr.Any{
		&expr.Payload{DestRegister: reg32(0), Base: expr.PayloadBaseNetworkHeader, Offset: ipv4DaddrOff, Len: 4},
		&expr.Lookup{SourceRegister: reg32(0), SetName: SetDispatch4, IsDestRegSet: true, DestRegister: 0},
	})
}

// vip6Kernel: meta nfproto ipv6 ip6 daddr vmap @dispatch6.
func (l *layout) vip6Kernel() []expr.Any {
	return concat(matchNFProto(afInet6), []expr.Any{
		&expr.Payload{DestRegister: reg32(0), Base: expr.PayloadBaseNetworkHeader, Offset: ipv6DaddrOff, Len: 16},
		&expr.Lookup{SourceRegister: reg32(0), SetName: SetDispatch6, IsDestRegSet: true, DestRegister: 0},
	})
}

// icmpErrorQueue: meta nfproto ipv4 meta l4proto icmp ip daddr @vips4
// icmp type TYPE counter queue.
func (l *layout) icmpErrorQueue(icmpType byte) []expr.Any {
	return concat(matchNFProto(afInet), matchL4Proto(unix.IPPROTO_ICMP),
		inSet(expr.PayloadBaseNetworkHeader, ipv4DaddrOff, 4, l.set4, false),
		byteEq(expr.PayloadBaseTransportHeader, 0, icmpType),
		[]expr.Any{&expr.Counter{}, l.queue()})
}

// icmp6ErrorQueue: ... ip6 daddr @vips6 icmpv6 type 1-3 counter queue.
func (l *layout) icmp6ErrorQueue() []expr.Any {
	return concat(matchNFProto(afInet6), matchL4Proto(unix.IPPROTO_ICMPV6),
		inSet(expr.PayloadBaseNetworkHeader, ipv6DaddrOff, 16, l.set6, false),
		byteRange(expr.PayloadBaseTransportHeader, 0, icmp6DestUnreach, icmp6TimeExceeded),
		[]expr.Any{&expr.Counter{}, l.queue()})
}

// fragNeededFromVIP: meta l4proto icmp icmp type destination-unreachable
// icmp code frag-needed meta mark != 0 ip daddr != @vips4 ip saddr !=
// @vips4 @th,192,32 @vips4 counter ip saddr set @th,192,32 meta mark set 0.
func (l *layout) fragNeededFromVIP() []expr.Any {
	return concat(matchNFProto(afInet), matchL4Proto(unix.IPPROTO_ICMP),
		byteEq(expr.PayloadBaseTransportHeader, 0, icmpDestUnreachable),
		byteEq(expr.PayloadBaseTransportHeader, 1, icmpFragNeeded),
		markNonZero(),
		inSet(expr.PayloadBaseNetworkHeader, ipv4DaddrOff, 4, l.set4, true),
		inSet(expr.PayloadBaseNetworkHeader, ipv4SaddrOff, 4, l.set4, true),
		inSet(expr.PayloadBaseTransportHeader, icmpInnerDaddrOff, 4, l.set4, false),
		[]expr.Any{&expr.Counter{}},
		copyToSource(icmpInnerDaddrOff, ipv4SaddrOff, 4, ipv4CsumOff),
		setMarkZero())
}

// packetTooBigFromVIP is fragNeededFromVIP for ICMPv6 packet-too-big; the
// checksum fixed is the ICMPv6 one (its pseudo-header holds the source).
func (l *layout) packetTooBigFromVIP() []expr.Any {
	return concat(matchNFProto(afInet6), matchL4Proto(unix.IPPROTO_ICMPV6),
		byteEq(expr.PayloadBaseTransportHeader, 0, icmp6PacketTooBig),
		markNonZero(),
		inSet(expr.PayloadBaseNetworkHeader, ipv6DaddrOff, 16, l.set6, true),
		inSet(expr.PayloadBaseNetworkHeader, ipv6SaddrOff, 16, l.set6, true),
		inSet(expr.PayloadBaseTransportHeader, icmp6InnerDaddrOff, 16, l.set6, false),
		[]expr.Any{&expr.Counter{}},
		copyToSource(icmp6InnerDaddrOff, ipv6SaddrOff, 16, icmp6CsumFromNetOff),
		setMarkZero())
}

func concat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func elements(addrs []netip.Addr) []nftables.SetElement {
	out := make([]nftables.SetElement, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, nftables.SetElement{Key: a.AsSlice()})
	}
	return out
}

// addAll queues, on c, the creation of the whole table with the given
// elements. The caller has already queued the deletion of an old table.
func (l *layout) addAll(c Conn, v4, v6 []netip.Addr) error {
	c.AddTable(l.table)
	if err := c.AddSet(l.set4, elements(v4)); err != nil {
		return fmt.Errorf("add set %s: %w", l.set4.Name, err)
	}
	if err := c.AddSet(l.set6, elements(v6)); err != nil {
		return fmt.Errorf("add set %s: %w", l.set6.Name, err)
	}
	for _, cs := range l.chains {
		c.AddChain(cs.chain)
		for _, r := range cs.rules {
			c.AddRule(&nftables.Rule{
				Table: l.table, Chain: cs.chain, Exprs: r.exprs(l),
				UserData: userdata.AppendString(nil, userdata.TypeComment, l.comment(r.name)),
			})
		}
	}
	return nil
}
