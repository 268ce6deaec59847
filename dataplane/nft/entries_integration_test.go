package nft

import (
	"encoding/binary"
	"maps"
	"slices"
	"testing"

	"github.com/google/nftables"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
)

// countingEntryConn counts the transactions it passes on.
type countingEntryConn struct {
	EntryConn
	commits int
}

func (c *countingEntryConn) CommitEntries(gen uint32, tx *EntryTx) error {
	c.commits++
	return c.EntryConn.CommitEntries(gen, tx)
}

// kernelEntries reads map set of our table: entry -> mark.
func kernelEntries(t *testing.T, conn *nftables.Conn, set string) map[uint32]uint32 {
	t.Helper()
	elems, err := conn.GetSetElements(&nftables.Set{Table: &nftables.Table{Name: DefaultTableName, Family: nftables.TableFamilyINet}, Name: set})
	if err != nil {
		t.Fatalf("list map %s: %v", set, err)
	}
	out := make(map[uint32]uint32, len(elems))
	for _, e := range elems {
		if len(e.Key) != 4 || len(e.Val) != 4 {
			t.Fatalf("map %s: element %x -> %x", set, e.Key, e.Val)
		}
		out[binary.NativeEndian.Uint32(e.Key)] = binary.NativeEndian.Uint32(e.Val)
	}
	return out
}

func wantEntries(entries []int) map[uint32]uint32 {
	out := make(map[uint32]uint32, len(entries))
	for i, id := range entries {
		out[uint32(i)] = endpointMark(id)
	}
	return out
}

// TestIntegrationEntryConnCommitsEntryChanges: on the real kernel, a
// change of 16,381-entry map's entries goes through NetlinkEntryConn and
// leaves exactly the wanted entries, with the table and its rules as they
// were; the kernel refuses a transaction with a stale generation, or one
// naming an entry the map does not have, as a whole, and says so; the
// same NetlinkEntryConn commits again after those refusals.
func TestIntegrationEntryConnCommitsEntryChanges(t *testing.T) {
	ns, fd := netns.New(t, "sllbrd-k-entries")
	conn, err := nftables.New(nftables.WithNetNSFd(fd))
	if err != nil {
		t.Fatal(err)
	}
	entryConn := &countingEntryConn{EntryConn: NewNetlinkEntryConn(fd)}
	p, err := New(conn, WithEntryConn(entryConn))
	if err != nil {
		t.Fatal(err)
	}
	const m = 16381
	entries := testEntries(m, func(i int) int { return i % 3 })
	if err := p.Program(kernelConfig(testFastPath(entries, nil))); err != nil {
		t.Fatal(err)
	}
	before := listTable(t, ns)
	moved := slices.Clone(entries)
	for i := range moved {
		if moved[i] == 2 && i%10 != 2 { // endpoint 2 keeps some entries, so its chain stays
			moved[i] = i % 2
		}
	}
	if err := p.Program(kernelConfig(testFastPath(moved, nil))); err != nil {
		t.Fatal(err)
	}
	if entryConn.commits != 1 {
		t.Errorf("%d transactions through the EntryConn, want 1", entryConn.commits)
	}
	got := kernelEntries(t, conn, "m4-svc")
	if want := wantEntries(moved); !maps.Equal(got, want) {
		t.Fatalf("map m4-svc has %d entries, %d as wanted", len(got), countEqual(got, want))
	}
	if after := listTable(t, ns); after.handle != before.handle || !equalRules(before.rules, after.rules) {
		t.Errorf("the entry change touched the table or its rules")
	}

	// Refused as a whole: a stale generation, an entry that does not exist.
	gen, err := conn.GetGen()
	if err != nil {
		t.Fatal(err)
	}
	back := EntryTx{Table: DefaultTableName, Maps: []EntryMapChange{{Set: "m4-svc", Entries: []uint32{0, 1, 2}, Marks: []uint32{endpointMark(1), endpointMark(2), endpointMark(0)}}}}
	// One connection throughout: after a refusal it still commits.
	again := NewNetlinkEntryConn(fd)
	t.Cleanup(func() { again.Close() })
	if err := again.CommitEntries(gen.ID-1, &back); err == nil {
		t.Errorf("a transaction with a stale generation was committed")
	}
	missing := back
	missing.Maps = []EntryMapChange{{Set: "m4-svc", Entries: []uint32{0, 1, m}, Marks: []uint32{endpointMark(1), endpointMark(2), endpointMark(0)}}}
	err = again.CommitEntries(gen.ID, &missing)
	if err == nil {
		t.Errorf("a transaction naming a missing entry was committed")
	}
	t.Logf("missing entry: %v", err)
	if got := kernelEntries(t, conn, "m4-svc"); !maps.Equal(got, wantEntries(moved)) {
		t.Errorf("a refused transaction changed %d entries", m-countEqual(got, wantEntries(moved)))
	}
	if err := again.CommitEntries(gen.ID, &back); err != nil {
		t.Fatalf("the valid transaction: %v", err)
	}
	if got := kernelEntries(t, conn, "m4-svc"); got[0] != endpointMark(1) || got[1] != endpointMark(2) || got[2] != endpointMark(0) || got[3] != endpointMark(0) {
		t.Errorf("after the valid transaction entries 0-3 map to %#x %#x %#x %#x", got[0], got[1], got[2], got[3])
	}
}

func countEqual(a, b map[uint32]uint32) int {
	n := 0
	for k, v := range a {
		if w, ok := b[k]; ok && w == v {
			n++
		}
	}
	return n
}
