package testpkt

import (
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// SCTPInit returns an IP packet of f (Proto 132) holding an association's
// first packet: verification tag 0 in the common header (RFC 9260 section
// 8.5.1) and one INIT chunk with initiateTag (not 0) as its Initiate Tag
// and Initial TSN, one stream each way, and the CRC32c checksum set.
func SCTPInit(f Flow, initiateTag uint32, o Options) []byte {
	if f.Proto != 132 || initiateTag == 0 {
		panic(fmt.Sprintf("testpkt: SCTP INIT of protocol %d with initiate tag %d", f.Proto, initiateTag))
	}
	buf := gopacket.NewSerializeBuffer()
	common := &layers.SCTP{SrcPort: layers.SCTPPort(f.SrcPort), DstPort: layers.SCTPPort(f.DstPort)}
	init := &layers.SCTPInit{SCTPChunk: layers.SCTPChunk{Type: layers.SCTPChunkTypeInit},
		InitiateTag: initiateTag, AdvertisedReceiverWindowCredit: 65535,
		OutboundStreams: 1, InboundStreams: 1, InitialTSN: initiateTag}
	if err := gopacket.SerializeLayers(buf, serialize, common, init); err != nil {
		panic(err)
	}
	return ip(f.Src, f.Dst, layers.IPProtocolSCTP, buf.Bytes(), o)
}
