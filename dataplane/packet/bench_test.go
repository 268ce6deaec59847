package packet

import "testing"

// BenchmarkDecode measures Decode per kind of packet.
func BenchmarkDecode(b *testing.B) {
	byName := map[string][]byte{}
	for _, tc := range decodeCases() {
		byName[tc.name] = tc.pkt
	}
	for _, name := range []string{
		"v4/tcp",
		"v4/udp",
		"v4/tcp-options",
		"v4/first-fragment-udp",
		"v4/later-fragment",
		"v4/echo-request",
		"v4/frag-needed-tcp",
		"v4/time-exceeded-udp-options",
		"v4/gre",
		"v4/invalid/tcp-3-bytes",
		"v6/tcp",
		"v6/hbh-routing-destopts-udp",
		"v6/hbh-first-fragment-destopts-tcp",
		"v6/later-fragment",
		"v6/echo-request",
		"v6/unreachable-tcp-ext",
		"v6/packet-too-big-udp",
		"v6/esp",
		"v6/invalid/nine-extension-headers",
	} {
		pkt, ok := byName[name]
		if !ok {
			b.Fatalf("no case %q", name)
		}
		b.Run(name, func(b *testing.B) {
			var p Packet
			b.ReportAllocs()
			for b.Loop() {
				p.Decode(pkt)
			}
		})
	}
}
