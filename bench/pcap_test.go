package bench

import (
	"bytes"
	"flag"
	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.pcap from the generator")

func TestPcapsUpToDate(t *testing.T) {
	for _, m := range Mixes {
		var buf bytes.Buffer
		if err := testpkt.WritePcap(&buf, m.Packets(rand.New(rand.NewPCG(1, 2)))); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", m.Name+".pcap")
		if *update {
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if !bytes.Equal(have, buf.Bytes()) {
			t.Errorf("%s differs from the generator's output; run go test ./bench -run TestPcapsUpToDate -update", path)
		}
		pkts, err := testpkt.ReadPcap(path)
		if err != nil || len(pkts) < 1000 {
			t.Errorf("testpkt.ReadPcap(%s) = %d packets, %v", path, len(pkts), err)
		}
	}
}
