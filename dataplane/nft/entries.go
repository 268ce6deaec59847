package nft

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// EntryTx is a transaction that only changes entries of entry maps (see
// EntryMap): the common change, one endpoint of a Service joining or
// leaving, rewrites about M/N entries of each family's map and nothing
// else. Each changed entry is deleted and added again, in one batch.
type EntryTx struct {
	// Table is our table's name (family inet).
	Table string
	// Maps are the changed maps.
	Maps []EntryMapChange
}

// EntryMapChange is the changed entries of one entry map.
type EntryMapChange struct {
	Set string
	// Entries are the entry numbers that change, ascending; Marks[i] is
	// the mark entry Entries[i] maps to from now on.
	Entries []uint32
	Marks   []uint32
}

// elements is how many entries the transaction rewrites.
func (tx *EntryTx) elements() int {
	n := 0
	for _, m := range tx.Maps {
		n += len(m.Entries)
	}
	return n
}

// EntryConn commits EntryTx transactions: a second kernel boundary beside
// Conn, because google/nftables encodes a set element at a time, with a
// handful of allocations each, which made a one-endpoint change of a
// 16,381-entry map cost more in Go than in the kernel. NetlinkEntryConn
// encodes a transaction into one buffer (appendEntryBatch).
type EntryConn interface {
	// CommitEntries commits tx in one nftables transaction, which the
	// kernel refuses when its ruleset generation is no longer genID.
	CommitEntries(genID uint32, tx *EntryTx) error
}

// The wire format (nf_tables.h). One batch, each line a netlink message
// (struct nlmsghdr, then the payload):
//
//	NFNL_MSG_BATCH_BEGIN   nfgenmsg{AF_UNSPEC, v0, res_id NFNL_SUBSYS_NFTABLES}
//	                       NFNL_BATCH_GENID u32 (big endian)
//	NFT_MSG_DELSETELEM     nfgenmsg{NFPROTO_INET, v0, 0}, per map, as many
//	                       messages as the 16-bit attribute length needs
//	NFT_MSG_NEWSETELEM     the same maps and entries, with their marks
//	NFNL_MSG_BATCH_END     as BATCH_BEGIN
//
// The attributes of a DELSETELEM or NEWSETELEM message:
//
//	NFTA_SET_ELEM_LIST_TABLE       string, NUL-terminated
//	NFTA_SET_ELEM_LIST_SET         string, NUL-terminated
//	NFTA_SET_ELEM_LIST_ELEMENTS    nested, one per entry:
//	  NFTA_LIST_ELEM               nested
//	    NFTA_SET_ELEM_KEY          nested
//	      NFTA_DATA_VALUE          u32 entry number, host byte order (as
//	                               the hash expression writes it)
//	    NFTA_SET_ELEM_DATA         nested (NEWSETELEM only)
//	      NFTA_DATA_VALUE          u32 mark, host byte order (as meta
//	                               mark reads it)
//
// An attribute is a 4-byte header {len u16, type u16} and its payload,
// padded to 4 bytes; len counts header and payload, not the padding.

// maxAttrLen is the largest attribute: its length is 16 bits.
const maxAttrLen = 0xffff

// appendEntryBatch appends to buf the whole batch of tx, netlink headers
// included, ready to send: deletions of all maps first, then additions.
// Messages are numbered from seq on.
func appendEntryBatch(buf []byte, seq, genID uint32, tx *EntryTx) ([]byte, error) {
	buf = appendBatchEdge(buf, unix.NFNL_MSG_BATCH_BEGIN, seq, genID)
	for _, add := range []bool{false, true} {
		typ := uint16(unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_DELSETELEM)
		if add {
			typ = unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_NEWSETELEM
		}
		for _, m := range tx.Maps {
			if len(m.Entries) != len(m.Marks) {
				return buf, fmt.Errorf("%w: map %s: %d entries, %d marks", ErrInvalidConfig, m.Set, len(m.Entries), len(m.Marks))
			}
			for i := 0; i < len(m.Entries); {
				seq++
				start := len(buf)
				buf = appendMessageHeader(buf, typ, unix.NLM_F_REQUEST|unix.NLM_F_CREATE, seq)
				var n int
				buf, n = appendElementMessage(buf, tx.Table, m, i, add)
				if n == 0 {
					return buf, fmt.Errorf("%w: map %s: entry %d does not fit a message", ErrInvalidConfig, m.Set, m.Entries[i])
				}
				setMessageLen(buf, start)
				i += n
			}
		}
	}
	return appendBatchEdge(buf, unix.NFNL_MSG_BATCH_END, seq+1, genID), nil
}

// appendBatchEdge appends a batch's begin or end message, which makes the
// kernel refuse the batch unless its ruleset generation is genID.
func appendBatchEdge(buf []byte, typ uint16, seq, genID uint32) []byte {
	start := len(buf)
	buf = appendMessageHeader(buf, typ, unix.NLM_F_REQUEST, seq)
	buf = append(buf, unix.AF_UNSPEC, unix.NFNETLINK_V0, 0, unix.NFNL_SUBSYS_NFTABLES) // res_id, big endian
	attr := len(buf)
	buf = appendAttrHeader(buf, unix.NFNL_BATCH_GENID)
	buf = binary.BigEndian.AppendUint32(buf, genID)
	setAttrLen(buf, attr)
	setMessageLen(buf, start)
	return buf
}

// appendMessageHeader appends a netlink message header (struct nlmsghdr)
// whose length setMessageLen fills in; the port ID 0 lets the kernel fill
// in the socket's.
func appendMessageHeader(buf []byte, typ, flags uint16, seq uint32) []byte {
	buf = append(buf, 0, 0, 0, 0)
	buf = binary.NativeEndian.AppendUint16(buf, typ)
	buf = binary.NativeEndian.AppendUint16(buf, flags)
	buf = binary.NativeEndian.AppendUint32(buf, seq)
	return binary.NativeEndian.AppendUint32(buf, 0)
}

func setMessageLen(buf []byte, start int) {
	binary.NativeEndian.PutUint32(buf[start:], uint32(len(buf)-start))
}

// appendElementMessage appends one message's payload holding m's entries
// from the i-th on, as many as fit, and reports how many it holds.
func appendElementMessage(buf []byte, table string, m EntryMapChange, i int, add bool) ([]byte, int) {
	buf = append(buf, unix.NFPROTO_INET, unix.NFNETLINK_V0, 0, 0) // nfgenmsg
	buf = appendStringAttr(buf, unix.NFTA_SET_ELEM_LIST_TABLE, table)
	buf = appendStringAttr(buf, unix.NFTA_SET_ELEM_LIST_SET, m.Set)
	list := len(buf)
	buf = appendAttrHeader(buf, unix.NFTA_SET_ELEM_LIST_ELEMENTS|unix.NLA_F_NESTED)
	n := 0
	for ; i+n < len(m.Entries); n++ {
		if len(buf)-list+elementSize(add) > maxAttrLen {
			break
		}
		buf = appendElement(buf, m.Entries[i+n], m.Marks[i+n], add)
	}
	setAttrLen(buf, list)
	return buf, n
}

// elementSize is the size of one NFTA_LIST_ELEM, as appendElement writes
// it.
func elementSize(add bool) int {
	const value = 4 + 4 + 4 // NFTA_SET_ELEM_KEY or _DATA { NFTA_DATA_VALUE u32 }
	if add {
		return 4 + 2*value
	}
	return 4 + value
}

// appendElement appends entry's NFTA_LIST_ELEM: its key, and with add its
// mark.
func appendElement(buf []byte, entry, mark uint32, add bool) []byte {
	elem := len(buf)
	buf = appendAttrHeader(buf, unix.NFTA_LIST_ELEM|unix.NLA_F_NESTED)
	buf = appendValue(buf, unix.NFTA_SET_ELEM_KEY, entry)
	if add {
		buf = appendValue(buf, unix.NFTA_SET_ELEM_DATA, mark)
	}
	setAttrLen(buf, elem)
	return buf
}

// appendValue appends the nested attribute typ { NFTA_DATA_VALUE v }, v in
// host byte order.
func appendValue(buf []byte, typ uint16, v uint32) []byte {
	start := len(buf)
	buf = appendAttrHeader(buf, typ|unix.NLA_F_NESTED)
	buf = appendAttrHeader(buf, unix.NFTA_DATA_VALUE)
	buf = binary.NativeEndian.AppendUint32(buf, v)
	setAttrLen(buf, start+4)
	setAttrLen(buf, start)
	return buf
}

// appendAttrHeader appends an attribute header whose length setAttrLen
// fills in once the payload follows it.
func appendAttrHeader(buf []byte, typ uint16) []byte {
	return binary.NativeEndian.AppendUint16(append(buf, 0, 0), typ)
}

// setAttrLen sets the length of the attribute starting at start to reach
// the end of buf (whose length is a multiple of 4 past start).
func setAttrLen(buf []byte, start int) {
	binary.NativeEndian.PutUint16(buf[start:], uint16(len(buf)-start))
}

// appendStringAttr appends a NUL-terminated string attribute, padded.
func appendStringAttr(buf []byte, typ uint16, s string) []byte {
	buf = binary.NativeEndian.AppendUint16(buf, uint16(4+len(s)+1))
	buf = binary.NativeEndian.AppendUint16(buf, typ)
	buf = append(append(buf, s...), 0)
	for len(buf)%4 != 0 {
		buf = append(buf, 0)
	}
	return buf
}

func align4(n int) int { return (n + 3) &^ 3 }
