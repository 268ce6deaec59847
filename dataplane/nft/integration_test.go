package nft

import (
	"encoding/json"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/nftables"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

func newKernelProgrammer(t *testing.T, ns string, fd int) *Programmer {
	t.Helper()
	require.Programs(t, "nft")
	conn, err := nftables.New(nftables.WithNetNSFd(fd))
	if err != nil {
		t.Fatalf("nftables.New: %v", err)
	}
	p, err := New(conn)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Logf("queue mode in %s: %s", ns, p.Mode())
	return p
}

func mustAddrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

// listed is what `nft -j list table` shows of our table.
type listed struct {
	tables   int
	handle   uint64              // of the table
	elements map[string][]string // set name -> elements
	rules    map[string][]uint64 // chain name -> rule handles in order
}

func listTable(t *testing.T, ns string) listed {
	t.Helper()
	out := netns.In(t, ns, "nft", "-j", "list", "ruleset")
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("parse nft json: %v", err)
	}
	l := listed{elements: map[string][]string{}, rules: map[string][]uint64{}}
	for _, obj := range doc.Nftables {
		var o struct {
			Table, Name, Chain string
			Family             string
			Handle             uint64
			Elem               []string
		}
		for kind, raw := range obj {
			if err := json.Unmarshal(raw, &o); err != nil {
				continue // metainfo
			}
			switch {
			case kind == "table" && o.Name == DefaultTableName:
				l.tables++
				l.handle = o.Handle
			case o.Table != DefaultTableName:
			case kind == "set":
				l.elements[o.Name] = append([]string{}, o.Elem...)
			case kind == "rule":
				l.rules[o.Chain] = append(l.rules[o.Chain], o.Handle)
			}
		}
	}
	return l
}

func TestIntegrationProgramIdempotentAndIncremental(t *testing.T) {
	ns, fd := netns.New(t, "sllbrd-k-nft")
	p := newKernelProgrammer(t, ns, fd)
	cfg := Config{VIPs: mustAddrs("20.0.0.1", "2000::1", "20.0.0.2"), Queues: QueueRange{First: 2, Count: 4}, Fanout: true}
	if err := p.Program(cfg); err != nil {
		t.Fatalf("Program: %v", err)
	}
	t.Logf("\n%s", netns.In(t, ns, "nft", "list", "table", "inet", DefaultTableName))
	first := listTable(t, ns)
	wantRules := map[string]int{ChainPrerouting: 2, ChainOutput: 3, ChainPMTU: 2}
	for chain, n := range wantRules {
		if len(first.rules[chain]) != n {
			t.Errorf("chain %s has %d rules, want %d", chain, len(first.rules[chain]), n)
		}
	}

	// Restart: a new Programmer programming the same config changes nothing.
	p2 := newKernelProgrammer(t, ns, fd)
	if err := p2.Program(cfg); err != nil {
		t.Fatalf("Program again: %v", err)
	}
	again := listTable(t, ns)
	if again.tables != 1 || again.handle != first.handle || !equalRules(first.rules, again.rules) {
		t.Errorf("reprogramming changed the table: %v -> %v", first, again)
	}

	// New VIPs: elements replaced, rules (handles) untouched.
	cfg.VIPs = mustAddrs("20.0.0.3", "2000::2", "2000::3")
	if err := p2.Program(cfg); err != nil {
		t.Fatalf("Program new VIPs: %v", err)
	}
	upd := listTable(t, ns)
	if upd.handle != first.handle || !equalRules(first.rules, upd.rules) {
		t.Errorf("VIP update replaced rules: %v -> %v", first.rules, upd.rules)
	}
	if got := upd.elements[SetVIPs4]; !slices.Equal(got, []string{"20.0.0.3"}) {
		t.Errorf("vips4 = %v", got)
	}
	if got := upd.elements[SetVIPs6]; !slices.Equal(got, []string{"2000::2", "2000::3"}) {
		t.Errorf("vips6 = %v", got)
	}

	// New queues: rules rebuilt, still one table, same rule counts.
	cfg.Queues = QueueRange{First: 0, Count: 1}
	if err := p2.Program(cfg); err != nil {
		t.Fatalf("Program new queues: %v", err)
	}
	rebuilt := listTable(t, ns)
	if rebuilt.tables != 1 || rebuilt.handle == first.handle {
		t.Errorf("queue change did not rebuild: %v", rebuilt)
	}
	for chain, n := range wantRules {
		if len(rebuilt.rules[chain]) != n {
			t.Errorf("after rebuild chain %s has %d rules, want %d", chain, len(rebuilt.rules[chain]), n)
		}
	}

	if err := p2.Cleanup(); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if gone := listTable(t, ns); gone.tables != 0 {
		t.Errorf("table still present after Cleanup")
	}
	if err := p2.Cleanup(); err != nil {
		t.Errorf("second Cleanup: %v", err)
	}
}

func equalRules(a, b map[string][]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
