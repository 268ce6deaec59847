package maglev

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

var updateKernel = flag.Bool("update-kernel-jhash", false, "rewrite "+kernelJHashPath+" from what the kernel computes (root)")

// kernelJHashSeeds are the seeds of the vectors; nftables reads seed 0 as
// "draw a random one", so it has none.
var kernelJHashSeeds = []uint32{FlowSeed, 1, 0xdeadbeef, 0xffffffff}

// kernelKeysPerLength keys of each flow key length: all zeros, all ones,
// and pseudo-random ones.
const kernelKeysPerLength = 8

func kernelJHashKeys(n int) [][]byte {
	keys := [][]byte{make([]byte, n), bytes.Repeat([]byte{0xff}, n)}
	rng := splitmix(n)
	for len(keys) < kernelKeysPerLength {
		k := make([]byte, n)
		for i := range k {
			k[i] = byte(rng.next())
		}
		keys = append(keys, k)
	}
	return keys
}

// Ports of the derivation: each (seed, length) has its own destination
// port and rule, each key of a length its own source port.
const (
	kernelDstPortBase = 40000
	kernelSrcPortBase = 20000
)

func kernelDstPort(seedIdx, length int) int { return kernelDstPortBase + 100*seedIdx + length }

// kernelJHashRuleset computes, per packet to 127.0.0.1 on lo, the kernel's
// jhash of the UDP payload (the key) into the mark with modulus 2^32-1, so
// that mark = reciprocal_scale(h, 2^32-1) = h-1 for h > 0, and records
// (destination port, source port, mark) in the set "seen".
func kernelJHashRuleset() string {
	var b strings.Builder
	b.WriteString("table inet sllbrd-jhash {\n")
	b.WriteString("\tset seen { typeof udp dport . udp sport . meta mark; flags dynamic; size 4096; }\n")
	b.WriteString("\tchain pre {\n\t\ttype filter hook prerouting priority raw; policy accept;\n")
	for si, seed := range kernelJHashSeeds {
		for _, n := range flowKeyLengths {
			fmt.Fprintf(&b, "\t\tudp dport %d meta mark set jhash @th,64,%d mod 4294967295 seed %#x\n", kernelDstPort(si, n), 8*n, seed)
		}
	}
	fmt.Fprintf(&b, "\t\tudp dport %d-%d add @seen { udp dport . udp sport . meta mark } drop\n", kernelDstPortBase, kernelDstPortBase+999)
	b.WriteString("\t}\n}\n")
	return b.String()
}

// TestIntegrationKernelJHashVectors derives jhash values from the running
// kernel (nftables' jhash over the payload of UDP packets on lo in a
// fresh network namespace) for the keys of kernelJHashKeys and checks
// that they are the ones stored in testdata/kernel-jhash.txt; with
// -update-kernel-jhash it rewrites that file instead.
func TestIntegrationKernelJHashVectors(t *testing.T) {
	require.Root(t)
	require.Programs(t, "ip", "nft")
	ns, _ := netns.New(t, "sllbrd-jhash")
	netns.In(t, ns, "ip", "link", "set", "lo", "up")
	netns.Run(t, "sh", "-c", fmt.Sprintf("ip netns exec %s nft -f - <<'EOF'\n%sEOF", ns, kernelJHashRuleset()))
	want := len(kernelJHashSeeds) * len(flowKeyLengths) * kernelKeysPerLength
	netns.DoOrFail(t, ns, func() error { return sendKernelJHashKeys() })
	marks := waitKernelMarks(t, ns, want)

	release, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	var derived []kernelVector
	for si, seed := range kernelJHashSeeds {
		for _, n := range flowKeyLengths {
			for ki, key := range kernelJHashKeys(n) {
				mark, ok := marks[[2]int{kernelDstPort(si, n), kernelSrcPortBase + ki}]
				if !ok {
					t.Fatalf("no mark recorded for seed %#x, %d-byte key %d", seed, n, ki)
				}
				if mark == 0 { // h is 0 or 1: ambiguous
					t.Fatalf("seed %#x, key %x: mark 0 does not tell the hash; choose other keys", seed, key)
				}
				derived = append(derived, kernelVector{seed: seed, key: key, hash: mark + 1})
			}
		}
	}
	text := kernelJHashHeader(strings.TrimSpace(string(release)), runtime.GOARCH)
	for _, v := range derived {
		text += v.String() + "\n"
	}
	if *updateKernel {
		if err := os.WriteFile(kernelJHashPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d vectors to %s", len(derived), kernelJHashPath)
		return
	}
	stored := readKernelVectors(t)
	if len(stored) != len(derived) {
		t.Fatalf("%s holds %d vectors, the kernel computed %d (rewrite it with -update-kernel-jhash)", kernelJHashPath, len(stored), len(derived))
	}
	for i, v := range derived {
		if stored[i].String() != v.String() {
			t.Errorf("the kernel computes %s, %s holds %s", v, kernelJHashPath, stored[i])
		}
	}
}

func kernelJHashHeader(release, arch string) string {
	return "# jhash values computed by the Linux kernel: nftables' jhash expression\n" +
		"# (net/netfilter/nft_hash.c: jhash over the source registers, then reciprocal_scale\n" +
		"# onto the modulus) at the flow key lengths 8, 16, 20, 40 and 44 bytes.\n" +
		"# Made as root by `go test ./maglev -run TestIntegrationKernelJHashVectors -update-kernel-jhash`\n" +
		"# on Linux " + release + " " + arch + " (little-endian: jhash reads 32-bit words in the CPU's\n" +
		"# byte order): each key is the payload of a UDP packet to 127.0.0.1 in a fresh network\n" +
		"# namespace; the rule `meta mark set jhash @th,64,<8*length> mod 4294967295 seed <seed>`\n" +
		"# sets the mark to reciprocal_scale(h, 2^32-1) = h-1 (h > 0), which a dynamic set records\n" +
		"# per packet: the hash is mark+1. The same test checks that the kernel still computes these.\n" +
		"# jhash seed=SEED key=KEY -> HASH (hexadecimal)\n"
}

// sendKernelJHashKeys sends every key to its (seed, length) port, from its
// key's source port; the ruleset drops them after recording.
func sendKernelJHashKeys() error {
	for ki := range kernelKeysPerLength {
		c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(kernelSrcPortBase+ki))))
		if err != nil {
			return err
		}
		for si := range kernelJHashSeeds {
			for _, n := range flowKeyLengths {
				to := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(kernelDstPort(si, n)))
				if _, err := c.WriteToUDPAddrPort(kernelJHashKeys(n)[ki], to); err != nil {
					c.Close()
					return fmt.Errorf("send to %s: %w", to, err)
				}
			}
		}
		c.Close()
	}
	return nil
}

// waitKernelMarks reads the set "seen" until it holds n elements (10 s at
// most) and returns the mark per (destination port, source port).
func waitKernelMarks(t *testing.T, ns string, n int) map[[2]int]uint32 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := netns.In(t, ns, "nft", "-j", "list", "set", "inet", "sllbrd-jhash", "seen")
		marks, err := parseSeen([]byte(out))
		if err != nil {
			t.Fatalf("%v in:\n%s", err, out)
		}
		if len(marks) >= n || time.Now().After(deadline) {
			if len(marks) != n {
				t.Fatalf("the kernel recorded %d packets, want %d", len(marks), n)
			}
			return marks
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// parseSeen reads the elements of `nft -j list set` of "seen": each a
// concatenation [dport, sport, mark], bare or as {"elem": {"val": ...}}.
func parseSeen(b []byte) (map[[2]int]uint32, error) {
	var doc struct {
		Nftables []struct {
			Set *struct {
				Elem []json.RawMessage `json:"elem"`
			} `json:"set"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	out := map[[2]int]uint32{}
	for _, o := range doc.Nftables {
		if o.Set == nil {
			continue
		}
		for _, raw := range o.Set.Elem {
			var e struct {
				Concat []uint64 `json:"concat"`
				Elem   struct {
					Val struct {
						Concat []uint64 `json:"concat"`
					} `json:"val"`
				} `json:"elem"`
			}
			if err := json.Unmarshal(raw, &e); err != nil {
				return nil, fmt.Errorf("element %s: %w", raw, err)
			}
			c := e.Concat
			if c == nil {
				c = e.Elem.Val.Concat
			}
			if len(c) != 3 {
				return nil, fmt.Errorf("element %s: want [dport, sport, mark]", raw)
			}
			out[[2]int{int(c[0]), int(c[1])}] = uint32(c[2])
		}
	}
	return out, nil
}
