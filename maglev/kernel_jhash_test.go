package maglev

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// kernelJHashPath holds jhash values the Linux kernel computed (its header
// says how; TestIntegrationKernelJHashVectors makes and checks it).
const kernelJHashPath = "testdata/kernel-jhash.txt"

// flowKeyLengths are the lengths of the flow keys both dataplane paths
// hash (dataplane/flowkey): ports only 8, IPv4 16, ICMP echo 20, IPv6 40,
// ICMPv6 echo 44 bytes.
var flowKeyLengths = []int{8, 16, 20, 40, 44}

// kernelVector is one line of kernelJHashPath.
type kernelVector struct {
	seed uint32
	key  []byte
	hash uint32
}

func (v kernelVector) String() string {
	return fmt.Sprintf("jhash seed=%08x key=%x -> %08x", v.seed, v.key, v.hash)
}

// readKernelVectors parses kernelJHashPath: comment lines (#) and lines as
// kernelVector.String writes them.
func readKernelVectors(t *testing.T) []kernelVector {
	t.Helper()
	f, err := os.Open(kernelJHashPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []kernelVector
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var v kernelVector
		var key string
		if _, err := fmt.Sscanf(line, "jhash seed=%x key=%s -> %x", &v.seed, &key, &v.hash); err != nil {
			t.Fatalf("%s:%d: %q: %v", kernelJHashPath, n, line, err)
		}
		if v.key, err = hex.DecodeString(key); err != nil {
			t.Fatalf("%s:%d: key %q: %v", kernelJHashPath, n, key, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestJHashKernelVectors checks JHash against values the kernel's
// nftables jhash computed, at every flow key length, with FlowSeed and
// other seeds: the unit-test form of the differential tests that need
// root. The kernel reads the key's 32-bit words in the CPU's byte order,
// so the stored values (from a little-endian machine) hold on
// little-endian machines only.
func TestJHashKernelVectors(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		require.Missing(t, "the vectors were computed by a little-endian kernel; this machine is big-endian")
	}
	vectors := readKernelVectors(t)
	lengths, flowSeed := map[int]int{}, 0
	for _, v := range vectors {
		lengths[len(v.key)]++
		if v.seed == FlowSeed {
			flowSeed++
		}
		if got := JHash(v.key, v.seed); got != v.hash {
			t.Errorf("JHash(%x, %#08x) = %08x, the kernel computed %08x", v.key, v.seed, got, v.hash)
		}
	}
	for _, n := range flowKeyLengths {
		if lengths[n] < 8 {
			t.Errorf("%s has %d vectors of %d bytes, want at least 8", kernelJHashPath, lengths[n], n)
		}
	}
	if flowSeed < len(flowKeyLengths)*8 {
		t.Errorf("%s has %d vectors with FlowSeed, want at least %d", kernelJHashPath, flowSeed, len(flowKeyLengths)*8)
	}
}
