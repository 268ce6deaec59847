/*
 * result.h: what the program reports for every packet, in the skb's control
 * buffer (cb[0..4], qdisc scratch space that tc programs own), where
 * BPF_PROG_TEST_RUN returns it in the context it copies out. Package bpfpath
 * (result.go) reads the same layout.
 */
#ifndef SLLBRD_RESULT_H
#define SLLBRD_RESULT_H

#include "kernel.h"

/*
 * enum status says what the program decided. bpf2go turns it into Go
 * constants (-type status), so Go and C share these values. 0 is never
 * written: a result of 0 means the program did not run to its end.
 */
enum status {
	/* The packet's flow key was built and hashed and its Maglev entry
	 * looked up: hash, entry, slot and key_len are set. */
	STATUS_DECIDED = 1,
	/* Punt: the Ethernet type is neither IPv4 nor IPv6 (VLAN tags
	 * included: they are not parsed yet). */
	STATUS_PUNT_NOT_IP = 2,
	/* Punt: a header the kernel's IP receive path drops or the userspace
	 * decoder calls invalid: truncated, IPv4 header length below 5 words,
	 * total length below the header or beyond the packet, IPv6 payload
	 * length 0 or beyond the packet, IP version unlike the Ethernet type,
	 * transport header shorter than its ports (4 bytes) or ICMP header (8). */
	STATUS_PUNT_MALFORMED = 3,
	/* Punt: an IPv4 fragment or an IPv6 packet whose first extension
	 * header is a fragment header (later fragments follow the first one's
	 * decision, which only the userspace fragment table knows). */
	STATUS_PUNT_FRAGMENT = 4,
	/* Punt: an IPv6 extension header (hop-by-hop, routing, AH, destination
	 * options) follows the IPv6 header; not walked yet. */
	STATUS_PUNT_IPV6_EXTENSION = 5,
	/* Punt: a protocol without a flow key here: not TCP, UDP, SCTP, or
	 * ICMP (in IPv4) / ICMPv6 (in IPv6) echo. */
	STATUS_PUNT_PROTOCOL = 6,
	/* Punt: an ICMP or ICMPv6 error (hashed on the flow it quotes by the
	 * userspace path; not parsed here yet). */
	STATUS_PUNT_ICMP_ERROR = 7,
	/* Punt: no Maglev table (size 0) or the entry lies beyond the table
	 * map. hash and key_len are set. */
	STATUS_PUNT_NO_TABLE = 8,
	/* Punt: the headers could not be pulled into the skb's linear data. */
	STATUS_PUNT_NONLINEAR = 9,
};

/* The layout of the result in cb[]. */
enum result_word {
	RESULT_STATUS = 0,
	RESULT_HASH = 1,    /* the flow hash (flowkey.Hash) */
	RESULT_ENTRY = 2,   /* reciprocal_scale(hash, M) */
	RESULT_SLOT = 3,    /* the slot that owns the entry (Table.Lookup32) */
	RESULT_KEY_LEN = 4, /* bytes of flow key hashed */
};

struct result {
	__u32 status;
	__u32 hash;
	__u32 entry;
	__u32 slot;
	__u32 key_len;
};

static __always_inline void write_result(struct __sk_buff *skb, const struct result *r)
{
	skb->cb[RESULT_STATUS] = r->status;
	skb->cb[RESULT_HASH] = r->hash;
	skb->cb[RESULT_ENTRY] = r->entry;
	skb->cb[RESULT_SLOT] = r->slot;
	skb->cb[RESULT_KEY_LEN] = r->key_len;
}

#endif
