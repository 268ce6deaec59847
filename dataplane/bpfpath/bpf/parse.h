/*
 * parse.h: Ethernet, IPv4 (with options), IPv6 (no extension headers) and
 * the transport header's ports or ICMP echo identifier, read as the
 * userspace decoder (package dataplane/packet) reads them. Every byte is
 * read at a fixed offset in network order; nothing is converted: struct flow
 * holds the bytes the flow key is made of.
 */
#ifndef SLLBRD_PARSE_H
#define SLLBRD_PARSE_H

#include "kernel.h"
#include "result.h"

#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86dd

#define IPV4_MIN_HLEN 20
#define IPV4_MAX_HLEN 60
#define IPV6_HLEN 40

#define IPPROTO_ICMP 1
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define IPPROTO_ICMPV6 58
#define IPPROTO_SCTP 132

/* IPv6 extension headers the userspace decoder walks (and so would hash
 * past): hop-by-hop, routing, fragment, AH, destination options. */
#define IPV6_EXT_HOPOPTS 0
#define IPV6_EXT_ROUTING 43
#define IPV6_EXT_FRAGMENT 44
#define IPV6_EXT_AH 51
#define IPV6_EXT_DSTOPTS 60

#define PORTS_LEN 4      /* source and destination port: TCP, UDP, SCTP */
#define ICMP_HLEN 8      /* type, code, checksum, identifier, sequence */
#define ICMP_ECHO_ID 4   /* offset of the echo identifier */

/* The longest run of headers the program reads: Ethernet, IPv4 with 40
 * bytes of options, 8 bytes of ICMP. pull() makes this much linear. */
#define PULL_LEN (ETH_HLEN + IPV4_MAX_HLEN + ICMP_HLEN)

/* A parsed flow: the bytes of its key fields as they are in the packet. */
struct flow {
	__u32 src[4];  /* source address; IPv4 uses src[0] */
	__u32 dst[4];  /* destination address; IPv4 uses dst[0] */
	__u32 ports;   /* source then destination port; for an echo the
			* identifier's 2 bytes and 2 zero bytes */
	__u8 family;   /* 4 or 6 */
	__u8 proto;    /* IP protocol (IPv6: next header) */
	__u8 echo;     /* ICMP or ICMPv6 echo request or reply */
	__u32 ip_len;  /* the IP packet's length by its header (what the
			* kernel path's counters count) */
};

static __always_inline __u16 be16_at(const __u8 *p)
{
	return ((__u16)p[0] << 8) | p[1];
}

/*
 * pull makes the first PULL_LEN bytes of the packet (or all of a shorter
 * one) linear, so that every header parse_flow reads lies between data and
 * data_end. A packet received whole is linear already, and
 * BPF_PROG_TEST_RUN's always are.
 */
static __always_inline int pull(struct __sk_buff *skb)
{
	__u32 want = skb->len < PULL_LEN ? skb->len : PULL_LEN;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;

	if (data + want <= data_end)
		return STATUS_DECIDED;
	if (bpf_skb_pull_data(skb, want) != 0)
		return STATUS_PUNT_NONLINEAR;
	return STATUS_DECIDED;
}

/* icmp_is_echo and icmp_is_error classify ICMP (family 4, RFC 792) and
 * ICMPv6 (family 6, RFC 4443) types as packet/icmp.go does. */
static __always_inline int icmp_is_echo(__u8 family, __u8 type)
{
	if (family == 4)
		return type == 8 || type == 0;
	return type == 128 || type == 129;
}

static __always_inline int icmp_is_error(__u8 family, __u8 type)
{
	if (family == 4)
		return type == 3 || type == 11 || type == 12;
	return type >= 1 && type <= 4;
}

/*
 * parse_l4 reads the ports (TCP, UDP, SCTP) or echo identifier (ICMP in
 * IPv4, ICMPv6 in IPv6) at l4, of which l4_len bytes belong to the packet
 * by its IP length.
 */
static __always_inline int parse_l4(const __u8 *l4, void *data_end, __u32 l4_len, struct flow *f)
{
	switch (f->proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_SCTP:
		if (l4_len < PORTS_LEN)
			return STATUS_PUNT_MALFORMED;
		if ((void *)(l4 + PORTS_LEN) > data_end)
			return STATUS_PUNT_NONLINEAR;
		__builtin_memcpy(&f->ports, l4, PORTS_LEN);
		return STATUS_DECIDED;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if ((f->proto == IPPROTO_ICMP) != (f->family == 4))
			return STATUS_PUNT_PROTOCOL; /* ICMPv6 in IPv4, ICMP in IPv6 */
		if (l4_len < ICMP_HLEN)
			return STATUS_PUNT_MALFORMED;
		if ((void *)(l4 + ICMP_HLEN) > data_end)
			return STATUS_PUNT_NONLINEAR;
		if (icmp_is_echo(f->family, l4[0])) {
			f->echo = 1;
			f->ports = 0;
			__builtin_memcpy(&f->ports, l4 + ICMP_ECHO_ID, 2);
			return STATUS_DECIDED;
		}
		if (icmp_is_error(f->family, l4[0]))
			return STATUS_PUNT_ICMP_ERROR;
		return STATUS_PUNT_PROTOCOL;
	}
	return STATUS_PUNT_PROTOCOL;
}

/*
 * parse_ipv4 parses the IPv4 packet at ip, len bytes long by the skb. The
 * total length cuts the packet (Ethernet padding follows it); one beyond
 * the packet is malformed (the kernel's ip_rcv_core drops it).
 */
static __always_inline int parse_ipv4(const __u8 *ip, void *data_end, __u32 len, struct flow *f)
{
	if ((void *)(ip + IPV4_MIN_HLEN) > data_end)
		return STATUS_PUNT_MALFORMED;
	if ((ip[0] >> 4) != 4)
		return STATUS_PUNT_MALFORMED;
	__u32 hlen = (ip[0] & 0x0f) * 4;
	if (hlen < IPV4_MIN_HLEN)
		return STATUS_PUNT_MALFORMED;
	__u32 total = be16_at(ip + 2);
	if (total < hlen || total > len)
		return STATUS_PUNT_MALFORMED;
	/* More fragments, or a fragment offset: a fragment. */
	if (be16_at(ip + 6) & 0x3fff)
		return STATUS_PUNT_FRAGMENT;
	f->family = 4;
	f->proto = ip[9];
	f->ip_len = total;
	__builtin_memcpy(&f->src[0], ip + 12, 4);
	__builtin_memcpy(&f->dst[0], ip + 16, 4);
	return parse_l4(ip + hlen, data_end, total - hlen, f);
}

/*
 * parse_ipv6 parses the IPv6 packet at ip, len bytes long by the skb. The
 * payload length cuts the packet; 0 (a jumbogram needs a hop-by-hop header,
 * which is punted first) or one beyond the packet is malformed.
 */
static __always_inline int parse_ipv6(const __u8 *ip, void *data_end, __u32 len, struct flow *f)
{
	if ((void *)(ip + IPV6_HLEN) > data_end)
		return STATUS_PUNT_MALFORMED;
	if ((ip[0] >> 4) != 6)
		return STATUS_PUNT_MALFORMED;
	__u8 next = ip[6];
	switch (next) {
	case IPV6_EXT_FRAGMENT:
		return STATUS_PUNT_FRAGMENT;
	case IPV6_EXT_HOPOPTS:
	case IPV6_EXT_ROUTING:
	case IPV6_EXT_AH:
	case IPV6_EXT_DSTOPTS:
		return STATUS_PUNT_IPV6_EXTENSION;
	}
	__u32 payload = be16_at(ip + 4);
	if (payload == 0 || payload > len - IPV6_HLEN)
		return STATUS_PUNT_MALFORMED;
	f->family = 6;
	f->proto = next;
	f->ip_len = IPV6_HLEN + payload;
	__builtin_memcpy(f->src, ip + 8, 16);
	__builtin_memcpy(f->dst, ip + 24, 16);
	return parse_l4(ip + IPV6_HLEN, data_end, payload, f);
}

/*
 * parse_frame parses the Ethernet frame at eth, of which len bytes follow
 * the Ethernet header (the whole packet's, linear or not), into f: both
 * front ends' parser (the tc program's skb, the XDP program's frame).
 */
static __always_inline enum status parse_frame(const __u8 *eth, void *data_end, __u32 len, struct flow *f)
{
	switch (be16_at(eth + 12)) {
	case ETH_P_IP:
		return parse_ipv4(eth + ETH_HLEN, data_end, len, f);
	case ETH_P_IPV6:
		return parse_ipv6(eth + ETH_HLEN, data_end, len, f);
	}
	return STATUS_PUNT_NOT_IP;
}

/*
 * parse_flow parses the Ethernet frame of skb into f. It is a function of
 * its own (a BPF-to-BPF call) so that its return type, enum status, is in
 * the object's BTF, where bpf2go finds it for Go (-type status).
 */
static __noinline enum status parse_flow(struct __sk_buff *skb, struct flow *f)
{
	const __u8 *eth = (const __u8 *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;

	if ((void *)(eth + ETH_HLEN) > data_end)
		return STATUS_PUNT_MALFORMED;
	return parse_frame(eth, data_end, skb->len - ETH_HLEN, f);
}

#endif
