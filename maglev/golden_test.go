package maglev

import (
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.txt from the current algorithm")

const goldenPath = "testdata/golden.txt"

// goldenTables are the configurations pinned by the golden file.
var goldenTables = []struct {
	n, every int
	opts     []Option
}{
	{n: 3, every: 1},
	{n: 32, every: 1},
	{n: 32, every: 3, opts: []Option{WithSize(997)}},
	{n: 1000, every: 7},
	{n: 10, every: 11}, // slot 0 only
}

// goldenText renders hashes, flow hashes, table digests and flow lookups;
// any change of Hash, JHash, of the permutation or of the populate order
// changes it.
func goldenText(t *testing.T) string {
	var b strings.Builder
	b.WriteString("# maglev golden data: go test ./maglev -run TestGolden -update rewrites it.\n")
	b.WriteString("# A diff here means tables or flow placement changed for every deployment.\n")
	key := make([]byte, 40)
	for n := range len(key) + 1 {
		for i := range key[:n] {
			key[i] = byte(31*i + n)
		}
		for _, seed := range []uint64{0, OffsetSeed} {
			fmt.Fprintf(&b, "hash seed=%016x key=%x -> %016x\n", seed, key[:n], Hash(seed, key[:n]))
		}
	}
	// The flow hash, for every key length the flow keys use (12, 20, 44)
	// and around them.
	key = make([]byte, 48)
	for n := range len(key) + 1 {
		for i := range key[:n] {
			key[i] = byte(37*i + n)
		}
		for _, seed := range []uint32{0, FlowSeed} {
			fmt.Fprintf(&b, "jhash seed=%08x key=%x -> %08x\n", seed, key[:n], JHash(key[:n], seed))
		}
	}
	hashes := flowHashes(60)
	for _, g := range goldenTables {
		tbl := mustBuild(t, mustParams(t, g.n, g.opts...), everyKth(g.n, g.every))
		raw := make([]byte, 2*len(tbl.entries))
		for i, e := range tbl.entries {
			binary.LittleEndian.PutUint16(raw[2*i:], e)
		}
		fmt.Fprintf(&b, "table N=%d M=%d every=%d active=%d sha256=%x\n",
			g.n, tbl.Size(), g.every, tbl.ActiveSlots(), sha256.Sum256(raw))
		for i, h := range hashes {
			slot, ok := tbl.Lookup32(h)
			fmt.Fprintf(&b, "  flow %d hash=%016x -> slot %d %v\n", i, h, slot, ok)
		}
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	got := goldenText(t)
	if *update {
		if err := os.WriteFile(goldenPath, []byte(got), 0o644); err != nil {
			t.Fatalf("write golden: %v", err)
		}
		return
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gotLines), len(wantLines)) {
		g, w := lineAt(gotLines, i), lineAt(wantLines, i)
		if g != w {
			t.Fatalf("golden line %d differs (algorithm changed?)\n got: %s\nwant: %s", i+1, g, w)
		}
	}
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "<missing>"
}
