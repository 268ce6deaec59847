package nft

import (
	"encoding/binary"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// testFastPath is a fast path like the compiler's: one VIP dispatched for
// UDP to a chain that goes to a route chain, which counts, looks the entry
// up in map "m4-svc" (entry -> mark) and the mark in "k4-svc", leading to
// endpoint chains e-<id>, each counting in its own counter. entries[i] is
// the endpoint of entry i; endpoint id has mark endpointMark(id).
func testFastPath(entries []int, sources []netip.Prefix) *FastPath {
	f := &FastPath{Dispatch: []Dispatch{{VIP: netip.MustParseAddr("20.0.0.1"), Chain: "d4-udp"}}}
	ids := slices.Compact(slices.Sorted(slices.Values(entries)))
	m := Set{Name: "m4-svc", Kind: EntryMap}
	for _, id := range entries {
		m.Marks = append(m.Marks, endpointMark(id))
	}
	k := Set{Name: "k4-svc", Kind: MarkMap, Goto: map[uint32]string{}, Size: MarkMapSize(len(ids))}
	for _, id := range ids {
		k.Goto[endpointMark(id)] = fmt.Sprintf("e-%d", id)
	}
	d := Chain{Name: "d4-udp"}
	if len(sources) > 0 {
		f.Sets = append(f.Sets, Set{Name: "s4-r", Kind: PrefixSet4, Prefixes: sources})
		d.Rules = append(d.Rules, Rule{Comment: "sources", Exprs: []expr.Any{
			load(expr.PayloadBaseNetworkHeader, ipv4SaddrOff, 4), &expr.Lookup{SourceRegister: 1, SetName: "s4-r"},
			&expr.Verdict{Kind: expr.VerdictGoto, Chain: "r4-udp"}}})
	} else {
		d.Rules = append(d.Rules, Rule{Comment: "any", Exprs: []expr.Any{&expr.Verdict{Kind: expr.VerdictGoto, Chain: "r4-udp"}}})
	}
	f.Chains = append(f.Chains, d, Chain{Name: "r4-udp", Rules: []Rule{{Comment: "balance", Exprs: []expr.Any{
		load(expr.PayloadBaseNetworkHeader, ipv4SaddrOff, 4),
		&expr.Objref{Type: 1, Name: "r-route"},
		&expr.Hash{SourceRegister: 1, DestRegister: 1, Length: 4, Modulus: uint32(len(entries)), Seed: 7, Type: expr.HashTypeJenkins},
		&expr.Lookup{SourceRegister: 1, SetName: m.Name, IsDestRegSet: true, DestRegister: 1},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1},
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Lookup{SourceRegister: 1, SetName: k.Name, IsDestRegSet: true}}}}})
	f.Counters = append(f.Counters, "r-route")
	for _, id := range ids {
		counter := fmt.Sprintf("c-%d", id)
		f.Counters = append(f.Counters, counter)
		f.Chains = append(f.Chains, Chain{Name: fmt.Sprintf("e-%d", id), Rules: []Rule{{Comment: fmt.Sprintf("endpoint %d", id),
			Exprs: []expr.Any{&expr.Objref{Type: 1, Name: counter}, &expr.Verdict{Kind: expr.VerdictAccept}}}}})
	}
	f.Sets = append(f.Sets, m, k)
	return f
}

func endpointMark(id int) uint32 { return 0x10000 + uint32(id) }

// testEntries is a map of m entries, entry i leading to endpoint
// endpoint(i).
func testEntries(m int, endpoint func(i int) int) []int {
	out := make([]int, m)
	for i := range out {
		out[i] = endpoint(i)
	}
	return out
}

func kernelConfig(f *FastPath) Config {
	return Config{VIPs: mustAddrs("20.0.0.1", "2000::1"), Queues: QueueRange{First: 0, Count: 2}, Kernel: f}
}

func countOps(ops []string) map[string]int {
	out := map[string]int{}
	for _, op := range ops {
		out[op]++
	}
	return out
}

// TestProgramFastPathChangesOnlyWhatDiffers: programming the same fast
// path again changes nothing (no transaction, no read); moving map entries
// from one endpoint to others deletes and re-adds those elements only, in
// one transaction; removing an endpoint deletes its chain and counter after
// the elements and rules that used them, as the kernel requires.
func TestProgramFastPathChangesOnlyWhatDiffers(t *testing.T) {
	f := newFakeConn()
	p, _ := New(f, WithQueueMode(QueueCompat))
	const m = 16381
	entries := testEntries(m, func(i int) int { return i % 3 })
	if err := p.Program(kernelConfig(testFastPath(entries, nil))); err != nil {
		t.Fatal(err)
	}
	if got := len(f.elementsOf("m4-svc")); got != m {
		t.Fatalf("map has %d elements, want %d", got, m)
	}
	f.ops = nil
	reads := f.reads
	if err := p.Program(kernelConfig(testFastPath(entries, nil))); err != nil || f.ops != nil || f.reads != reads {
		t.Fatalf("same config again: err %v, ops %v, %d reads", err, f.ops, f.reads-reads)
	}

	// Endpoint 2 goes: its entries go to 0 and 1.
	moved := slices.Clone(entries)
	for i := range moved {
		if moved[i] == 2 {
			moved[i] = i % 2
		}
	}
	if err := p.Program(kernelConfig(testFastPath(moved, nil))); err != nil {
		t.Fatal(err)
	}
	ops := countOps(f.ops)
	if ops["DelTable"] != 0 || ops["FlushSet"] != 0 || ops["AddRule"] != 0 || ops["FlushChain"] != 1 ||
		ops["DelChain"] != 1 || ops["DeleteObject"] != 1 || ops["SetDeleteElements"] == 0 || ops["SetAddElements"] == 0 {
		t.Errorf("ops of one endpoint's removal: %v", ops)
	}
	tb := f.state[DefaultTableName]
	if tb.chain("e-2") != nil || tb.objs["c-2"] || len(f.elementsOf("m4-svc")) != m {
		t.Errorf("after the removal: chain e-2 %v, counter c-2 %v, %d elements", tb.chain("e-2") != nil, tb.objs["c-2"], len(f.elementsOf("m4-svc")))
	}
	for _, e := range tb.sets["m4-svc"].elems {
		if binary.NativeEndian.Uint32(e.Val) == endpointMark(2) {
			t.Fatalf("an entry still maps to endpoint 2's mark")
		}
	}
	if got := len(f.elementsOf("k4-svc")); got != 2 {
		t.Errorf("the mark map has %d elements after the removal, want 2", got)
	}

	// A source set appears, changes and goes; the route's rule with it.
	for _, sources := range [][]netip.Prefix{
		{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.0/24")},
		{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("0.0.0.0/0")},
		nil,
	} {
		if err := p.Program(kernelConfig(testFastPath(moved, sources))); err != nil {
			t.Fatalf("sources %v: %v", sources, err)
		}
		if got, want := len(f.elementsOf("s4-r")), len(prefixElements(sources)); got != want {
			t.Errorf("sources %v: %d elements, want %d", sources, got, want)
		}
	}
	if f.state[DefaultTableName].sets["s4-r"] != nil {
		t.Errorf("the source set outlived its rule")
	}
}

// TestProgramFastPathReadsAfterForeignChanges: the cache of what was
// committed is used only while nobody else committed; a chain changed
// behind our back is rewritten.
func TestProgramFastPathReadsAfterForeignChanges(t *testing.T) {
	f := newFakeConn()
	p, _ := New(f, WithQueueMode(QueueNative))
	cfg := kernelConfig(testFastPath([]int{0, 1, 0}, nil))
	if err := p.Program(cfg); err != nil {
		t.Fatal(err)
	}
	tb := f.state[DefaultTableName]
	tb.rules["e-1"] = nil // someone flushed an endpoint chain
	f.gen++
	reads := f.reads
	f.ops = nil
	if err := p.Program(cfg); err != nil {
		t.Fatal(err)
	}
	if f.reads == reads || countOps(f.ops)["AddRule"] != 1 {
		t.Errorf("after a foreign change: %d reads, ops %v; want a read and e-1's rule added", f.reads-reads, f.ops)
	}
	if len(f.state[DefaultTableName].rules["e-1"]) != 1 {
		t.Errorf("chain e-1 not repaired")
	}
}

func TestFastPathValidation(t *testing.T) {
	ok := testFastPath([]int{0}, nil)
	for name, mutate := range map[string]func(f *FastPath){
		"dispatch to an unknown chain": func(f *FastPath) { f.Dispatch[0].Chain = "nope" },
		"dispatch of a non-VIP":        func(f *FastPath) { f.Dispatch[0].VIP = netip.MustParseAddr("20.0.0.9") },
		"chain twice":                  func(f *FastPath) { f.Chains = append(f.Chains, f.Chains[0]) },
		"a base chain's name":          func(f *FastPath) { f.Chains[0].Name = ChainPrerouting },
		"map to an unknown chain":      func(f *FastPath) { f.Sets[1].Goto[endpointMark(0)] = "nope" },
		"endpoint map without a size":  func(f *FastPath) { f.Sets[1].Size = 0 },
		"endpoint map over its size": func(f *FastPath) {
			for id := 1; id <= int(f.Sets[1].Size); id++ {
				f.Sets[1].Goto[endpointMark(id)] = f.Sets[1].Goto[endpointMark(0)]
			}
		},
		"a name too long": func(f *FastPath) { f.Counters = append(f.Counters, string(make([]byte, 256))) },
	} {
		f := *ok
		f.Dispatch, f.Chains, f.Counters = slices.Clone(ok.Dispatch), slices.Clone(ok.Chains), slices.Clone(ok.Counters)
		f.Sets = []Set{{Name: ok.Sets[0].Name, Kind: EntryMap, Marks: slices.Clone(ok.Sets[0].Marks)},
			{Name: ok.Sets[1].Name, Kind: MarkMap, Goto: maps.Clone(ok.Sets[1].Goto), Size: ok.Sets[1].Size}}
		mutate(&f)
		if err := kernelConfig(&f).Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
	if err := kernelConfig(ok).Validate(); err != nil {
		t.Errorf("valid fast path: %v", err)
	}
}

// TestIntervalElements: prefixes and port ranges become merged intervals,
// the one reaching the top without an end element.
func TestIntervalElements(t *testing.T) {
	render := func(es []nftables.SetElement) []string {
		var out []string
		for _, e := range es {
			out = append(out, elementIdentity(e))
		}
		return out
	}
	got := render(prefixElements([]netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("11.0.0.0/8"), netip.MustParsePrefix("255.255.255.0/24")}))
	if want := []string{"0a000000", "0c000000 end", "ffffff00 open"}; !slices.Equal(got, want) {
		t.Errorf("prefixes: %v, want %v", got, want)
	}
	got = render(portElements([]PortRange{{From: 80, To: 80}, {From: 81, To: 90}, {From: 1000, To: 65535}}))
	if want := []string{"0050", "005b end", "03e8 open"}; !slices.Equal(got, want) {
		t.Errorf("ports: %v, want %v", got, want)
	}
}

func TestMarkMapSize(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want uint32
	}{{0, 64}, {1, 64}, {64, 64}, {65, 128}, {1000, 1024}} {
		if got := MarkMapSize(tc.n); got != tc.want {
			t.Errorf("MarkMapSize(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}
