package nft

import (
	"encoding/binary"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
)

// FastPath is the part of the table that decides VIP packets in the kernel
// (built by package fastpath). Program wires it in: the prerouting chain
// looks (destination, protocol) up in the dispatch maps and jumps to the
// chain of the match; a packet for which the chains give no verdict returns
// to prerouting and is queued as without a fast path.
type FastPath struct {
	// Dispatch lists the VIPs decided in the kernel and the chain each one
	// jumps to. VIPs must be in Config.VIPs.
	Dispatch []Dispatch
	// Chains are the regular chains the dispatch leads to, with their rules.
	Chains []Chain
	// Sets are the named sets and maps the rules look up.
	Sets []Set
	// Counters are the named counter objects the rules count in.
	Counters []string
}

// Dispatch sends packets to VIP to chain Chain.
type Dispatch struct {
	VIP   netip.Addr
	Chain string
}

// Chain is a regular chain and its rules in order.
type Chain struct {
	Name  string
	Rules []Rule
}

// Rule is one rule. Comment describes it for people (nft list ruleset); the
// rule's identity, stored as its comment, is Comment plus a digest of its
// expressions, so that a rule is rewritten exactly when it changes.
type Rule struct {
	Comment string
	Exprs   []expr.Any
}

// SetKind says what a Set holds.
type SetKind int

const (
	// PrefixSet4 is an interval set of IPv4 prefixes (Prefixes).
	PrefixSet4 SetKind = iota + 1
	// PrefixSet6 is an interval set of IPv6 prefixes (Prefixes).
	PrefixSet6
	// PortSet is an interval set of port ranges (Ports).
	PortSet
	// EntryMap is a map from an entry number 0..len(Marks)-1 (a 32-bit
	// value in host byte order, as the hash expression writes it) to the
	// fwmark Marks[entry] (host byte order, as meta mark reads it), of
	// size len(Marks): its entries change, never their number. It maps to
	// data, not to verdicts: a commit that changes its entries costs the
	// kernel no walk of the ruleset's jumps (nf_tables validates the
	// chains a verdict map leads to, for every element, on each commit
	// that adds a jump or goto anywhere in the table).
	EntryMap
	// MarkMap is a verdict map from a fwmark to "goto Goto[mark]": one
	// element per endpoint, the small second step after an EntryMap.
	MarkMap
)

// Set is a named set or map of the fast path.
type Set struct {
	Name     string
	Kind     SetKind
	Prefixes []netip.Prefix
	Ports    []PortRange
	Marks    []uint32          // EntryMap
	Goto     map[uint32]string // MarkMap
	// Size is a MarkMap's most elements, MarkMapSize of its endpoints:
	// the kernel refuses more.
	Size uint32
}

// MarkMapSize is the size of a MarkMap of n endpoints: a power of two, at
// least minMarkMapSize. Sized, the kernel keeps the map in a fixed hash
// table of 4-byte keys (nft_hash_fast), which a packet looks up without
// the resizable table's hashing and key compare (nft_rhash); a new size
// is a new map, so the compiler names the map by its size.
func MarkMapSize(n int) uint32 { return powerOfTwoSize(minMarkMapSize, n) }

// minMarkMapSize is the smallest size of a MarkMap: a Service of up to 64
// endpoints keeps its map, a table of 128 buckets (1 KiB), as it grows.
const minMarkMapSize = 64

// PortRange is the ports From..To.
type PortRange struct{ From, To uint16 }

// Names of the dispatch maps in the prerouting chain (kernel path).
const (
	SetDispatch4 = "dispatch4"
	SetDispatch6 = "dispatch6"
)

// maxNameLen bounds the names of chains, sets and objects (the kernel's
// limit is 255 bytes).
const maxNameLen = 255

// validate checks what the kernel would reject with a less helpful error.
func (f *FastPath) validate(vips []netip.Addr) error {
	chains := map[string]bool{}
	for _, c := range f.Chains {
		if err := checkName("chain", c.Name); err != nil {
			return err
		}
		if chains[c.Name] || isBaseChain(c.Name) {
			return fmt.Errorf("%w: chain %q defined twice", ErrInvalidConfig, c.Name)
		}
		chains[c.Name] = true
	}
	for _, d := range f.Dispatch {
		if !chains[d.Chain] {
			return fmt.Errorf("%w: dispatch of %v to unknown chain %q", ErrInvalidConfig, d.VIP, d.Chain)
		}
		if !slices.ContainsFunc(vips, func(v netip.Addr) bool { return v.Unmap() == d.VIP.Unmap() }) {
			return fmt.Errorf("%w: dispatch of %v, which is not a VIP", ErrInvalidConfig, d.VIP)
		}
	}
	sets := map[string]bool{SetVIPs4: true, SetVIPs6: true, SetDispatch4: true, SetDispatch6: true}
	for _, s := range f.Sets {
		if err := checkName("set", s.Name); err != nil {
			return err
		}
		if sets[s.Name] {
			return fmt.Errorf("%w: set %q defined twice", ErrInvalidConfig, s.Name)
		}
		sets[s.Name] = true
		if s.Kind == MarkMap && (s.Size == 0 || len(s.Goto) > int(s.Size)) {
			return fmt.Errorf("%w: map %s of %d elements has size %d", ErrInvalidConfig, s.Name, len(s.Goto), s.Size)
		}
		for _, c := range s.Goto {
			if !chains[c] {
				return fmt.Errorf("%w: map %s leads to unknown chain %q", ErrInvalidConfig, s.Name, c)
			}
		}
	}
	for _, c := range f.Counters {
		if err := checkName("counter", c); err != nil {
			return err
		}
	}
	return nil
}

func checkName(what, name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("%w: %s name %q: want 1..%d bytes", ErrInvalidConfig, what, name, maxNameLen)
	}
	return nil
}

func isBaseChain(name string) bool {
	return name == ChainPrerouting || name == ChainOutput || name == ChainPMTU
}

// nftSet returns the kernel set for s.
func (s *Set) nftSet(t *nftables.Table) *nftables.Set {
	set := &nftables.Set{Table: t, Name: s.Name}
	switch s.Kind {
	case PrefixSet4:
		set.KeyType, set.Interval = nftables.TypeIPAddr, true
	case PrefixSet6:
		set.KeyType, set.Interval = nftables.TypeIP6Addr, true
	case PortSet:
		set.KeyType, set.Interval = nftables.TypeInetService, true
	case MarkMap:
		// Sized (MarkMapSize), as the entry maps and for the same reason.
		set.KeyType, set.IsMap, set.DataType, set.KeyByteOrder = nftables.TypeMark, true, nftables.TypeVerdict, binaryutil.NativeEndian
		set.Size = s.Size
	default:
		// Sized: the kernel then keeps the map in a fixed hash table
		// (nft_hash_fast for 4-byte keys) rather than a resizable one.
		set.KeyType, set.IsMap, set.DataType, set.Size = nftables.TypeInteger, true, nftables.TypeMark, uint32(len(s.Marks))
		set.KeyByteOrder = binaryutil.NativeEndian
	}
	return set
}

// elements returns the elements of s.
func (s *Set) elements() []nftables.SetElement {
	switch s.Kind {
	case PrefixSet4, PrefixSet6:
		return prefixElements(s.Prefixes)
	case PortSet:
		return portElements(s.Ports)
	case MarkMap:
		return markElements(s.Goto)
	}
	elems := make([]nftables.SetElement, len(s.Marks))
	b := newEntryBuilder(len(s.Marks))
	for i, mark := range s.Marks {
		elems[i] = b.entry(uint32(i), mark)
	}
	return elems
}

// entryBuilder makes entry map elements: their keys share one array and
// their data another, so that a map of M entries costs a few allocations,
// not 2M.
type entryBuilder struct{ keys, data []byte }

func newEntryBuilder(entries int) *entryBuilder {
	return &entryBuilder{keys: make([]byte, 0, 4*entries), data: make([]byte, 0, 4*entries)}
}

// entry is entry number i, mapped to mark: both in host byte order, as
// the hash expression writes the one and meta mark reads the other.
func (b *entryBuilder) entry(i, mark uint32) nftables.SetElement {
	b.keys = binary.NativeEndian.AppendUint32(b.keys, i)
	b.data = binary.NativeEndian.AppendUint32(b.data, mark)
	n := len(b.keys)
	return nftables.SetElement{Key: b.keys[n-4 : n : n], Val: b.data[n-4 : n : n]}
}

// markElements returns a MarkMap's elements, in the order of their marks.
func markElements(gotos map[uint32]string) []nftables.SetElement {
	out := make([]nftables.SetElement, 0, len(gotos))
	for _, mark := range slices.Sorted(maps.Keys(gotos)) {
		out = append(out, nftables.SetElement{Key: binary.NativeEndian.AppendUint32(nil, mark),
			VerdictData: &expr.Verdict{Kind: expr.VerdictGoto, Chain: gotos[mark]}})
	}
	return out
}

// sameContent reports whether s and o hold the same elements.
func (s *Set) sameContent(o *Set) bool {
	return s.Kind == o.Kind && slices.Equal(s.Prefixes, o.Prefixes) && slices.Equal(s.Ports, o.Ports) &&
		slices.Equal(s.Marks, o.Marks) && maps.Equal(s.Goto, o.Goto)
}

// prefixElements encodes prefixes as intervals [first, last+1) after
// merging overlapping and adjacent ones: a start element and an end element
// (flag interval-end); a range that reaches the last address has no end
// element (an open interval).
func prefixElements(prefixes []netip.Prefix) []nftables.SetElement {
	var out []nftables.SetElement
	for _, r := range mergeAddrRanges(prefixes) {
		out = append(out, nftables.SetElement{Key: r[0].AsSlice()})
		if next := r[1].Next(); next.IsValid() {
			out = append(out, nftables.SetElement{Key: next.AsSlice(), IntervalEnd: true})
		} else {
			out[len(out)-1].IntervalOpen = true
		}
	}
	return out
}

// mergeAddrRanges returns the address ranges [first, last] the prefixes
// cover, sorted, with overlapping and adjacent ones joined (interval sets
// refuse overlapping intervals).
func mergeAddrRanges(prefixes []netip.Prefix) [][2]netip.Addr {
	var rs [][2]netip.Addr
	for _, p := range prefixes {
		rs = append(rs, [2]netip.Addr{p.Masked().Addr(), lastAddr(p)})
	}
	slices.SortFunc(rs, func(a, b [2]netip.Addr) int { return a[0].Compare(b[0]) })
	var out [][2]netip.Addr
	for _, r := range rs {
		if n := len(out); n > 0 {
			last := out[n-1][1]
			if next := last.Next(); !next.IsValid() || r[0].Compare(next) <= 0 {
				if r[1].Compare(last) > 0 {
					out[n-1][1] = r[1]
				}
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// portElements encodes port ranges (sorted, disjoint) as intervals, like
// prefixElements.
func portElements(ports []PortRange) []nftables.SetElement {
	var out []nftables.SetElement
	for _, r := range mergePorts(ports) {
		out = append(out, nftables.SetElement{Key: binary.BigEndian.AppendUint16(nil, r.From)})
		if r.To == 0xffff {
			out[len(out)-1].IntervalOpen = true
			continue
		}
		out = append(out, nftables.SetElement{Key: binary.BigEndian.AppendUint16(nil, r.To+1), IntervalEnd: true})
	}
	return out
}

func mergePorts(in []PortRange) []PortRange {
	s := slices.Clone(in)
	slices.SortFunc(s, func(a, b PortRange) int { return int(a.From) - int(b.From) })
	var out []PortRange
	for _, r := range s {
		if n := len(out); n > 0 && int(r.From) <= int(out[n-1].To)+1 {
			out[n-1].To = max(out[n-1].To, r.To)
			continue
		}
		out = append(out, r)
	}
	return out
}

// dispatchSets returns the dispatch maps of both families with their
// elements: VIP -> jump chain. They are sized (a power of two, at least
// minDispatchSize) so that the kernel keeps the IPv4 one in a fixed hash
// table of 4-byte keys; a size change rebuilds the table.
func dispatchSets(t *nftables.Table, f *FastPath) (v4, v6 *setSpec) {
	v4 = &setSpec{set: &nftables.Set{Table: t, Name: SetDispatch4, IsMap: true, KeyType: nftables.TypeIPAddr, DataType: nftables.TypeVerdict}}
	v6 = &setSpec{set: &nftables.Set{Table: t, Name: SetDispatch6, IsMap: true, KeyType: nftables.TypeIP6Addr, DataType: nftables.TypeVerdict}}
	if f != nil {
		for _, d := range f.Dispatch {
			a := d.VIP.Unmap()
			e := nftables.SetElement{Key: a.AsSlice(), VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: d.Chain}}
			if a.Is4() {
				v4.elems = append(v4.elems, e)
			} else {
				v6.elems = append(v6.elems, e)
			}
		}
	}
	v4.set.Size, v6.set.Size = dispatchSize(len(v4.elems)), dispatchSize(len(v6.elems))
	return v4, v6
}

// minDispatchSize is the smallest size of a dispatch map.
const minDispatchSize = 64

func dispatchSize(n int) uint32 { return powerOfTwoSize(minDispatchSize, n) }

// powerOfTwoSize is the smallest size least*2^k that holds n elements
// (least a power of two).
func powerOfTwoSize(least uint32, n int) uint32 {
	size := least
	for int(size) < n {
		size *= 2
	}
	return size
}

func mustConcat(types ...nftables.SetDatatype) nftables.SetDatatype {
	t, err := nftables.ConcatSetType(types...)
	if err != nil {
		panic(err) // fixed, valid arguments
	}
	return t
}
