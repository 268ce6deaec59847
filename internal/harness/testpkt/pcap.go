package testpkt

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// WritePcap writes packets as a raw-IP pcap with fixed timestamps, so the
// same packets always give the same bytes.
func WritePcap(w io.Writer, packets [][]byte) error {
	pw := pcapgo.NewWriter(w)
	if err := pw.WriteFileHeader(65535, layers.LinkTypeRaw); err != nil {
		return fmt.Errorf("pcap header: %w", err)
	}
	ts := time.Unix(1_750_000_000, 0).UTC()
	for i, p := range packets {
		ci := gopacket.CaptureInfo{Timestamp: ts.Add(time.Duration(i) * time.Microsecond), CaptureLength: len(p), Length: len(p)}
		if err := pw.WritePacket(ci, p); err != nil {
			return fmt.Errorf("pcap packet %d: %w", i, err)
		}
	}
	return nil
}

// ReadPcap returns the packets of a raw-IP pcap file.
func ReadPcap(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := pcapgo.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out [][]byte
	for {
		data, _, err := r.ReadPacketData()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: packet %d: %w", path, len(out), err)
		}
		out = append(out, data)
	}
}

// PcapSample returns every n-th packet of the pcap files matching glob, for
// fuzz seeds; it fails tb when none is found.
func PcapSample(tb interface {
	Helper()
	Fatalf(string, ...any)
}, glob string, n int) [][]byte {
	tb.Helper()
	files, _ := filepath.Glob(glob)
	var out [][]byte
	for _, name := range files {
		pkts, err := ReadPcap(name)
		if err != nil {
			tb.Fatalf("%v", err)
		}
		for i := 0; i < len(pkts); i += n {
			out = append(out, pkts[i])
		}
	}
	if len(out) == 0 {
		tb.Fatalf("no packets in %s", glob)
	}
	return out
}
