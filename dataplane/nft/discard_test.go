package nft

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

var errEncode = errors.New("marshal item 0: cannot encode")

// queueModes are the two ways a Conn may keep a queueing failure: as
// google/nftables does (its next Flush returns it and commits nothing),
// or not at all (its next Flush commits what is queued).
var queueModes = []struct {
	name   string
	forget bool
}{{"kept like google/nftables", false}, {"forgotten", true}}

// TestFailedQueueingLeavesNothingQueued: when queueing fails part-way
// (here the VIP set's new element, after its old one's deletion was
// queued), Program fails, commits nothing and leaves nothing queued: the
// next Program commits exactly its own change, and Cleanup deletes the
// table in a transaction of its own.
func TestFailedQueueingLeavesNothingQueued(t *testing.T) {
	base := Config{VIPs: mustAddrs("20.0.0.1", "2000::1"), Queues: QueueRange{First: 0, Count: 1}}
	next := Config{VIPs: mustAddrs("20.0.0.2"), Queues: base.Queues}
	for _, mode := range queueModes {
		t.Run(mode.name, func(t *testing.T) {
			f := newFakeConn()
			f.forgetQueueErr = mode.forget
			p, err := New(f, WithQueueMode(QueueCompat))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Program(base); err != nil {
				t.Fatal(err)
			}
			f.failQueue = func(op string) error {
				if op == "SetAddElements" {
					return errEncode
				}
				return nil
			}
			if err := p.Program(next); !errors.Is(err, errEncode) {
				t.Fatalf("Program with an element that cannot be queued = %v, want %v", err, errEncode)
			}
			if len(f.pending) != 0 || f.queueErr != nil {
				t.Errorf("the failed Program left %d operations queued (and error %v) for the next commit", len(f.pending), f.queueErr)
			}
			if got := f.elementsOf(SetVIPs4); len(got) != 1 {
				t.Errorf("the failed Program changed the VIP set: %v", got)
			}

			f.failQueue = nil
			if err := p.Program(next); err != nil {
				t.Fatalf("the next Program: %v", err)
			}
			if v4, v6 := f.elementsOf(SetVIPs4), f.elementsOf(SetVIPs6); len(v4) != 1 || len(v6) != 0 {
				t.Errorf("after the next Program: vips4 %v, vips6 %v; want one and none", v4, v6)
			}
			f.failQueue = func(op string) error {
				if op == "SetDeleteElements" {
					return errEncode
				}
				return nil
			}
			if err := p.Program(base); !errors.Is(err, errEncode) {
				t.Fatalf("Program with an element that cannot be deleted = %v", err)
			}
			f.failQueue = nil
			if err := p.Cleanup(); err != nil {
				t.Fatalf("Cleanup after a failed Program: %v", err)
			}
			if !slices.Equal(f.ops, []string{"AddTable", "DelTable"}) || len(f.state) != 0 {
				t.Errorf("Cleanup committed %v and left %d tables; want [AddTable DelTable] and none", f.ops, len(f.state))
			}
		})
	}
}

// TestProbeKernelPathStartsEachTryAfresh: a try whose queueing fails
// leaves nothing for the next try's commit, which then succeeds and
// leaves no table.
func TestProbeKernelPathStartsEachTryAfresh(t *testing.T) {
	for _, mode := range queueModes {
		t.Run(mode.name, func(t *testing.T) {
			f := newFakeConn()
			f.forgetQueueErr = mode.forget
			failed := false
			f.failQueue = func(op string) error {
				if op == "AddSet" && !failed {
					failed = true
					return errEncode
				}
				return nil
			}
			off, err := ProbeKernelPath(f)
			if err != nil || off != MaxPayloadOffsetLegacy {
				t.Fatalf("ProbeKernelPath = %d, %v; want %d after the first try failed", off, err, MaxPayloadOffsetLegacy)
			}
			if len(f.state) != 0 || len(f.pending) != 0 {
				t.Errorf("the probe left %d tables and %d queued operations", len(f.state), len(f.pending))
			}
		})
	}
}

// TestIntegrationDiscardCommitsNothing: on the real kernel, operations
// queued on a lasting google/nftables connection and then discarded are
// not committed, and the connection's next transaction holds only its own
// operations.
func TestIntegrationDiscardCommitsNothing(t *testing.T) {
	require.Root(t)
	require.Programs(t, "nft")
	ns, fd := netns.New(t, "sllbrd-nft-discard")
	conn, err := nftables.New(nftables.WithNetNSFd(fd), nftables.AsLasting())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.CloseLasting() })
	for i := range 3 { // the second and third start from a generation the first two made
		gen, err := conn.GetGen()
		if err != nil {
			t.Fatal(err)
		}
		discarded := conn.AddTable(&nftables.Table{Name: "discarded", Family: nftables.TableFamilyINet})
		conn.AddChain(&nftables.Chain{Name: "c", Table: discarded})
		discard(conn, gen.ID)
		if out := netns.In(t, ns, "nft", "list", "tables"); strings.Contains(out, "discarded") {
			t.Fatalf("try %d: the discarded operations were committed:\n%s", i, out)
		}
		kept := conn.AddTable(&nftables.Table{Name: fmt.Sprintf("kept%d", i), Family: nftables.TableFamilyINet})
		if err := conn.Flush(); err != nil {
			t.Fatalf("try %d: the next transaction: %v", i, err)
		}
		out := netns.In(t, ns, "nft", "list", "ruleset")
		if !strings.Contains(out, "table inet "+kept.Name) || strings.Contains(out, "discarded") || strings.Contains(out, "chain c") {
			t.Fatalf("try %d: after the next transaction the ruleset is:\n%s", i, out)
		}
	}
}
