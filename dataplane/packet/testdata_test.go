package packet

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

var update = flag.Bool("update", false, "rewrite testdata/decode-cases.{pcap,txt} from the test table")

var (
	casesPcap  = filepath.Join("testdata", "decode-cases.pcap")
	casesIndex = filepath.Join("testdata", "decode-cases.txt")
)

// TestTestdataMatchesTable keeps testdata/decode-cases.pcap (raw IP, link
// type 101, one packet per table case in table order) and its index
// decode-cases.txt in step with the table. Run with -update after changing
// the table.
func TestTestdataMatchesTable(t *testing.T) {
	cases := decodeCases()
	pcap, index := casesAsPcap(t, cases), casesAsIndex(cases)
	if *update {
		for path, data := range map[string][]byte{casesPcap: pcap, casesIndex: index} {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	gotIndex, err := os.ReadFile(casesIndex)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(gotIndex, index) {
		t.Errorf("%s is stale: run go test -run TestTestdataMatchesTable -update", casesIndex)
	}
	packets := readPcap(t, casesPcap)
	if len(packets) != len(cases) {
		t.Fatalf("%s holds %d packets, the table %d: run with -update", casesPcap, len(packets), len(cases))
	}
	for i, tc := range cases {
		if !bytes.Equal(packets[i], tc.pkt) {
			t.Errorf("%s packet %d differs from case %s: run with -update", casesPcap, i, tc.name)
		}
	}
}

func casesAsPcap(t *testing.T, cases []decodeCase) []byte {
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if err := w.WriteFileHeader(65535, layers.LinkTypeRaw); err != nil {
		t.Fatal(err)
	}
	for i, tc := range cases {
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(int64(i), 0).UTC(), CaptureLength: len(tc.pkt), Length: len(tc.pkt)}
		if err := w.WritePacket(ci, tc.pkt); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func casesAsIndex(cases []decodeCase) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# packet index in decode-cases.pcap, case name, expected kind, expected error\n")
	for i, tc := range cases {
		reason := "-"
		if tc.want.Err != nil {
			reason = tc.want.Err.Error()
		}
		fmt.Fprintf(&buf, "%d\t%s\t%v\t%s\n", i, tc.name, tc.want.Kind, reason)
	}
	return buf.Bytes()
}

func readPcap(t *testing.T, path string) [][]byte {
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var packets [][]byte
	for {
		data, _, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return packets
		}
		if err != nil {
			t.Fatal(err)
		}
		packets = append(packets, bytes.Clone(data))
	}
}
