package lab

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
)

// TestFrame: the gateway's frames carry lb1's MAC, the gateway's, the
// packet's Ethernet type by its IP version, and the packet unchanged.
func TestFrame(t *testing.T) {
	fl := frameLink{ifindex: 3, src: net.HardwareAddr{2, 0, 0, 0, 0, 1}, dst: net.HardwareAddr{2, 0, 0, 0, 0, 2}}
	for _, tc := range []struct {
		src, dst string
		typ      []byte
	}{{"10.100.0.2", "20.0.0.1", []byte{0x08, 0x00}}, {"fd00:100::2", "2001:db8::1", []byte{0x86, 0xdd}}} {
		p := testpkt.Packet(testpkt.Flow{Src: netip.MustParseAddr(tc.src), Dst: netip.MustParseAddr(tc.dst), Proto: unix.IPPROTO_UDP, SrcPort: 1, DstPort: 2}, nil, testpkt.Options{})
		f := fl.frame(p)
		if !bytes.Equal(f[0:6], fl.dst) || !bytes.Equal(f[6:12], fl.src) || !bytes.Equal(f[12:14], tc.typ) || !bytes.Equal(f[14:], p) {
			t.Errorf("%s: frame % x, want dst %v src %v type % x and the packet % x", tc.dst, f, fl.dst, fl.src, tc.typ, p)
		}
	}
}
