package nft

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// testEntryTx changes n entries of a 16,381-entry map and three of
// another.
func testEntryTx(n int) *EntryTx {
	big := EntryMapChange{Set: "m4-service-a-16381"}
	for i := range n {
		big.Entries = append(big.Entries, uint32(3*i+1))
		big.Marks = append(big.Marks, 0x10000+uint32(i%3*50))
	}
	small := EntryMapChange{Set: "m6-b-16381", Entries: []uint32{0, 7, 16380}, Marks: []uint32{0x10001, 0x10016, 0x1ffff}}
	return &EntryTx{Table: DefaultTableName, Maps: []EntryMapChange{big, small}}
}

// wireElement is one element of a DELSETELEM or NEWSETELEM message, as the
// kernel reads it.
type wireElement struct {
	msg        string // "del" or "new"
	table, set string
	key        string
	data       string // "" or the value, in hex
}

// decodeElements decodes the element messages among msgs.
func decodeElements(t *testing.T, msgs []netlink.Message) []wireElement {
	t.Helper()
	var out []wireElement
	for _, m := range msgs {
		var kind string
		switch m.Header.Type {
		case unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_DELSETELEM:
			kind = "del"
		case unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_NEWSETELEM:
			kind = "new"
		default:
			continue
		}
		if m.Data[0] != unix.NFPROTO_INET {
			t.Fatalf("%s message of family %d", kind, m.Data[0])
		}
		ad := mustDecoder(t, m.Data[4:])
		var table, set string
		var elems []wireElement
		for ad.Next() {
			switch ad.Type() {
			case unix.NFTA_SET_ELEM_LIST_TABLE:
				table = ad.String()
			case unix.NFTA_SET_ELEM_LIST_SET:
				set = ad.String()
			case unix.NFTA_SET_ELEM_LIST_ELEMENTS:
				ad.Nested(func(list *netlink.AttributeDecoder) error {
					for list.Next() {
						e := wireElement{msg: kind}
						list.Nested(func(el *netlink.AttributeDecoder) error {
							decodeElement(el, &e)
							return nil
						})
						elems = append(elems, e)
					}
					return nil
				})
			}
		}
		if err := ad.Err(); err != nil {
			t.Fatalf("decode %s message: %v", kind, err)
		}
		for _, e := range elems {
			e.table, e.set = table, set
			out = append(out, e)
		}
	}
	return out
}

func decodeElement(el *netlink.AttributeDecoder, e *wireElement) {
	for el.Next() {
		switch el.Type() {
		case unix.NFTA_SET_ELEM_KEY:
			el.Nested(func(k *netlink.AttributeDecoder) error {
				for k.Next() {
					e.key = hex.EncodeToString(k.Bytes())
				}
				return nil
			})
		case unix.NFTA_SET_ELEM_DATA:
			el.Nested(func(d *netlink.AttributeDecoder) error {
				for d.Next() {
					e.data = fmt.Sprintf("%d:%x", d.Type(), d.Bytes())
				}
				return nil
			})
		}
	}
}

func mustDecoder(t *testing.T, b []byte) *netlink.AttributeDecoder {
	t.Helper()
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		t.Fatal(err)
	}
	ad.ByteOrder = binary.BigEndian
	return ad
}

// googleElements returns the messages google/nftables sends for tx: each
// entry deleted, then added again with its mark.
func googleElements(t *testing.T, tx *EntryTx) []netlink.Message {
	t.Helper()
	var sent []netlink.Message
	conn, err := nftables.New(nftables.WithTestDial(func(req []netlink.Message) ([]netlink.Message, error) {
		sent = append(sent, req...)
		return nil, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	table := &nftables.Table{Name: tx.Table, Family: nftables.TableFamilyINet}
	for _, add := range []bool{false, true} {
		for _, m := range tx.Maps {
			set := &nftables.Set{Table: table, Name: m.Set}
			var elems []nftables.SetElement
			for i, entry := range m.Entries {
				e := nftables.SetElement{Key: binary.NativeEndian.AppendUint32(nil, entry)}
				if add {
					e.Val = binary.NativeEndian.AppendUint32(nil, m.Marks[i])
				}
				elems = append(elems, e)
			}
			if add {
				err = conn.SetAddElements(set, elems)
			} else {
				err = conn.SetDeleteElements(set, elems)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := conn.Flush(); err != nil {
		t.Fatal(err)
	}
	return sent
}

// splitBatch parses a batch into its netlink messages.
func splitBatch(t *testing.T, b []byte) []netlink.Message {
	t.Helper()
	var out []netlink.Message
	for len(b) > 0 {
		n := int(binary.NativeEndian.Uint32(b))
		if n < unix.NLMSG_HDRLEN || n > len(b) {
			t.Fatalf("a message of %d bytes in %d", n, len(b))
		}
		var m netlink.Message
		if err := m.UnmarshalBinary(b[:n]); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
		b = b[align4(n):]
	}
	return out
}

// TestEntryBatchAgreesWithGoogleNFTables: the kernel reads from our batch
// the same elements, in the same order, as from google/nftables' encoding
// of the same deletions and additions; the batch carries the generation
// and numbers its messages; a large change is split into messages whose
// attributes fit their 16-bit lengths.
func TestEntryBatchAgreesWithGoogleNFTables(t *testing.T) {
	for _, n := range []int{1, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			tx := testEntryTx(n)
			buf, err := appendEntryBatch(nil, 7, 42, tx)
			if err != nil {
				t.Fatal(err)
			}
			ours := splitBatch(t, buf)
			first, last := ours[0], ours[len(ours)-1]
			if first.Header.Type != unix.NFNL_MSG_BATCH_BEGIN || last.Header.Type != unix.NFNL_MSG_BATCH_END {
				t.Fatalf("batch framing: first %v, last %v", first.Header.Type, last.Header.Type)
			}
			for i, m := range ours {
				if m.Header.Sequence != uint32(7+i) || m.Header.Flags&netlink.Request == 0 {
					t.Errorf("message %d: sequence %d, flags %v", i, m.Header.Sequence, m.Header.Flags)
				}
			}
			for _, edge := range []netlink.Message{first, last} {
				ad := mustDecoder(t, edge.Data[4:])
				for ad.Next() {
					if ad.Type() != unix.NFNL_BATCH_GENID || ad.Uint32() != 42 {
						t.Errorf("batch edge attribute %d = %x, want NFNL_BATCH_GENID 42", ad.Type(), ad.Bytes())
					}
				}
			}
			got, want := decodeElements(t, ours), decodeElements(t, googleElements(t, tx))
			if len(got) != 2*tx.elements() || !slices.Equal(got, want) {
				t.Fatalf("ours decode to %d elements, google/nftables' to %d; first difference at %d",
					len(got), len(want), firstDifference(got, want))
			}
			if split := len(ours) > 6; split != (n == 5000) {
				t.Errorf("%d entries in %d messages", 2*tx.elements(), len(ours))
			}
			for _, m := range ours {
				if len(m.Data) > 4+2*(4+32)+maxAttrLen {
					t.Errorf("a message of %d bytes: its elements cannot fit one attribute", len(m.Data))
				}
			}
			if again, _ := appendEntryBatch(buf[:0], 7, 42, tx); &again[0] != &buf[0] || !bytes.Equal(again, buf) {
				t.Errorf("a second encoding did not reuse the buffer, or differs")
			}
		})
	}
}

func firstDifference(a, b []wireElement) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestAppendEntryBatchAllocatesNothing pins the encoding of a 5,000-entry
// change into a reused buffer at zero allocations.
func TestAppendEntryBatchAllocatesNothing(t *testing.T) {
	tx := testEntryTx(5000)
	buf, _ := appendEntryBatch(nil, 1, 1, tx)
	allocs := testing.AllocsPerRun(20, func() {
		buf, _ = appendEntryBatch(buf[:0], 1, 1, tx)
	})
	if allocs != 0 {
		t.Errorf("%.0f allocations per encoding, want 0", allocs)
	}
}

func BenchmarkAppendEntryBatch(b *testing.B) {
	tx := testEntryTx(5460)
	buf, _ := appendEntryBatch(nil, 1, 1, tx)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = appendEntryBatch(buf[:0], 1, 1, tx)
	}
}

// fakeSnapshot renders a fake kernel's table for comparison: every set's
// elements with their data, every chain's rule comments, the counters.
func fakeSnapshot(f *fakeConn) []string {
	t := f.state[DefaultTableName]
	if t == nil {
		return nil
	}
	var out []string
	for name, s := range t.sets {
		for _, e := range s.elems {
			out = append(out, fmt.Sprintf("set %s %s %s", name, elementIdentity(e), elementData(e)))
		}
	}
	for _, c := range t.chains {
		out = append(out, "chain "+c.Name)
		for _, r := range t.rules[c.Name] {
			out = append(out, fmt.Sprintf("rule %s %x", c.Name, r.UserData))
		}
	}
	for name := range t.objs {
		out = append(out, "counter "+name)
	}
	slices.Sort(out)
	return out
}

// TestProgramCommitsEntryChangesOnTheirOwn: with an EntryConn, a change
// of nothing but map entries is committed through it, and any other change
// through the Conn in one transaction as before; after every step the
// table is the one a Programmer without an EntryConn makes.
func TestProgramCommitsEntryChangesOnTheirOwn(t *testing.T) {
	const m = 1021
	entries := func(f func(i int) int) []int { return testEntries(m, f) }
	sources := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	steps := []struct {
		name    string
		fp      *FastPath
		entryTx bool
	}{
		{"first", testFastPath(entries(func(i int) int { return i % 3 }), nil), false},
		{"endpoint 2 keeps a tenth of its entries", testFastPath(entries(func(i int) int {
			if i%3 == 2 && i%10 != 2 {
				return i % 2
			}
			return i % 3
		}), nil), true},
		{"and gets them back", testFastPath(entries(func(i int) int { return i % 3 }), nil), true},
		{"the same again", testFastPath(entries(func(i int) int { return i % 3 }), nil), false},
		{"entries and a source set", testFastPath(entries(func(i int) int { return (i + 1) % 3 }), sources), false},
		{"endpoint 2 goes", testFastPath(entries(func(i int) int { return i % 2 }), sources), false},
		{"entries only again", testFastPath(entries(func(i int) int { return (i / 7) % 2 }), sources), true},
	}
	withEntries, plain := newFakeConn(), newFakeConn()
	p, _ := New(withEntries, WithQueueMode(QueueNative), WithEntryConn(withEntries))
	q, _ := New(plain, WithQueueMode(QueueNative))
	for _, s := range steps {
		txs := withEntries.entryTxs
		withEntries.ops = nil
		if err := p.Program(kernelConfig(s.fp)); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if err := q.Program(kernelConfig(s.fp)); err != nil {
			t.Fatalf("%s, without an EntryConn: %v", s.name, err)
		}
		if used := withEntries.entryTxs > txs; used != s.entryTx {
			t.Errorf("%s: committed through the EntryConn: %v, want %v (ops %v)", s.name, used, s.entryTx, countOps(withEntries.ops))
		}
		if got, want := fakeSnapshot(withEntries), fakeSnapshot(plain); !slices.Equal(got, want) {
			t.Fatalf("%s: the table differs from the one made without an EntryConn (%d vs %d lines)", s.name, len(got), len(want))
		}
	}

	// Someone else commits meanwhile: the entry transaction is refused
	// with its stale generation, and the next Program reads the table back
	// and repairs it.
	next := testFastPath(entries(func(i int) int { return (i / 3) % 2 }), sources)
	withEntries.race = true
	before := fakeSnapshot(withEntries)
	if err := p.Program(kernelConfig(next)); err == nil {
		t.Fatalf("a stale generation was committed")
	}
	if !slices.Equal(fakeSnapshot(withEntries), before) {
		t.Fatalf("the refused transaction changed the table")
	}
	reads := withEntries.reads
	if err := p.Program(kernelConfig(next)); err != nil || withEntries.reads == reads {
		t.Fatalf("after the refusal: %v, %d reads", err, withEntries.reads-reads)
	}
	if err := q.Program(kernelConfig(next)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fakeSnapshot(withEntries), fakeSnapshot(plain)) {
		t.Errorf("after the repair the table differs from the one made without an EntryConn")
	}
}
