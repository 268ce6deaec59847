package nfqueue

// Wire constants of nfnetlink_queue (linux/netfilter/nfnetlink_queue.h,
// linux/netfilter.h) that golang.org/x/sys/unix does not define.

// Message types within the NFNL_SUBSYS_QUEUE subsystem.
const (
	msgPacket  = 0 // NFQNL_MSG_PACKET: kernel -> user, one queued packet
	msgVerdict = 1 // NFQNL_MSG_VERDICT: user -> kernel
	msgConfig  = 2 // NFQNL_MSG_CONFIG: user -> kernel
)

// Attributes of NFQNL_MSG_PACKET and NFQNL_MSG_VERDICT (enum nfqnl_attr_type).
const (
	attrPacketHdr   = 1  // NFQA_PACKET_HDR: be32 id, be16 hw_protocol, u8 hook
	attrVerdictHdr  = 2  // NFQA_VERDICT_HDR: be32 verdict, be32 id
	attrMark        = 3  // NFQA_MARK: be32
	attrIfindexIn   = 5  // NFQA_IFINDEX_INDEV: be32
	attrIfindexOut  = 6  // NFQA_IFINDEX_OUTDEV: be32
	attrPayload     = 10 // NFQA_PAYLOAD: the (possibly truncated) packet
	attrCapLen      = 13 // NFQA_CAP_LEN: be32 original length when truncated
	attrSkbInfo     = 14 // NFQA_SKB_INFO: be32 NFQA_SKB_* flags
	packetHdrLen    = 7
	verdictHdrLen   = 8
	attrTypeMask    = 0x3fff // strips NLA_F_NESTED and NLA_F_NET_BYTEORDER
	attrHeaderLen   = 4
	nfgenmsgLen     = 4
	nlmsgHeaderLen  = 16
	nlmsgErrorLen   = 4 + nlmsgHeaderLen // int error + the offending header
	verdictMsgLen   = nlmsgHeaderLen + nfgenmsgLen + attrHeaderLen + verdictHdrLen
	verdictMarkLen  = attrHeaderLen + 4
	maxVerdictBytes = verdictMsgLen + verdictMarkLen
)

// Attributes of NFQNL_MSG_CONFIG (enum nfqnl_attr_config).
const (
	cfgAttrCmd      = 1 // NFQA_CFG_CMD: u8 command, u8 pad, be16 pf
	cfgAttrParams   = 2 // NFQA_CFG_PARAMS: be32 copy_range, u8 copy_mode
	cfgAttrQueueMax = 3 // NFQA_CFG_QUEUE_MAXLEN: be32
	cfgAttrMask     = 4 // NFQA_CFG_MASK: be32
	cfgAttrFlags    = 5 // NFQA_CFG_FLAGS: be32
)

// Config commands, copy modes and flags.
const (
	cfgCmdBind     = 1 // NFQNL_CFG_CMD_BIND
	copyModePacket = 2 // NFQNL_COPY_PACKET
	cfgFlagGSO     = 4 // NFQA_CFG_F_GSO (NFQA_CFG_F_FAIL_OPEN = 1 is never set)
)

// SkbInfo flags (NFQA_SKB_*), reported in Packet.SkbInfo.
const (
	SkbCsumNotReady    = 1 // NFQA_SKB_CSUMNOTREADY: checksum not yet computed
	SkbGSO             = 2 // NFQA_SKB_GSO: the payload is a GSO super-packet
	SkbCsumNotVerified = 4 // NFQA_SKB_CSUM_NOTVERIFIED
)

// Netfilter verdict values (NF_DROP, NF_ACCEPT).
const (
	nfDrop   = 0
	nfAccept = 1
)

// MaxCopyRange is the largest copy range the kernel honours
// (NFQNL_MAX_COPY_RANGE = 0xffff - NLA_HDRLEN).
const MaxCopyRange = 0xffff - attrHeaderLen

// align4 rounds n up to the netlink alignment (NLMSG_ALIGN, NLA_ALIGN).
func align4(n int) int { return (n + 3) &^ 3 }
