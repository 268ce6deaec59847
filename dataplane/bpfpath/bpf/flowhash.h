/*
 * flowhash.h: the flow key as package dataplane/flowkey lays it out
 * (nftables registers: every field zero-padded to 4 bytes) and the kernel's
 * jhash over it (include/linux/jhash.h, maglev.JHash), seeded with
 * flow_seed (maglev.FlowSeed, set by the loader).
 *
 *   TCP, UDP, SCTP: source, destination, ports, protocol
 *                   (IPv4 16 bytes, IPv6 40)
 *   SCTP ports only: ports, protocol (8 bytes)
 *   ICMP/ICMPv6 echo: source, destination, identifier, identifier, protocol
 *                   (IPv4 20 bytes, IPv6 44)
 *
 * The key is built as 32-bit words holding the key's bytes in memory order,
 * so that jhash's loads read what the kernel's would read from nftables'
 * registers on this byte order.
 */
#ifndef SLLBRD_FLOWHASH_H
#define SLLBRD_FLOWHASH_H

#include "kernel.h"
#include "parse.h"

#define FLOW_KEY_MAX_WORDS 11 /* IPv6 echo: 16 + 16 + 4 + 4 + 4 bytes */

/* The flow hash's seed: maglev.FlowSeed, which the loader writes before
 * loading (a read-only global, so the verifier sees a constant). */
volatile const __u32 flow_seed;

#define JHASH_INITVAL 0xdeadbeef

static __always_inline __u32 rol32(__u32 w, unsigned int s)
{
	return (w << s) | (w >> (32 - s));
}

#define jhash_mix(a, b, c)                        \
	{                                         \
		a -= c; a ^= rol32(c, 4);  c += b; \
		b -= a; b ^= rol32(a, 6);  a += c; \
		c -= b; c ^= rol32(b, 8);  b += a; \
		a -= c; a ^= rol32(c, 16); c += b; \
		b -= a; b ^= rol32(a, 19); a += c; \
		c -= b; c ^= rol32(b, 4);  b += a; \
	}

#define jhash_final(a, b, c)                \
	{                                   \
		c ^= b; c -= rol32(b, 14);  \
		a ^= c; a -= rol32(c, 11);  \
		b ^= a; b -= rol32(a, 25);  \
		c ^= b; c -= rol32(b, 16);  \
		a ^= c; a -= rol32(c, 4);   \
		b ^= a; b -= rol32(a, 14);  \
		c ^= b; c -= rol32(b, 24);  \
	}

/* tail_word is the kernel jhash's reading of a word among the last 12 bytes:
 * byte by byte, least significant first, whatever the byte order. */
static __always_inline __u32 tail_word(__u32 w)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return w;
#else
	return __builtin_bswap32(w);
#endif
}

/*
 * jhash_words is jhash(k, 4 * words, initval) for a key of whole words;
 * words is a constant at every call, so the loop unrolls and every index is
 * constant. Like the kernel's, it reads all but the last 12 bytes in the
 * CPU's byte order (keys are never empty).
 */
static __always_inline __u32 jhash_words(const __u32 *k, const unsigned int words, __u32 initval)
{
	__u32 a, b, c;
	unsigned int i = 0;

	a = b = c = JHASH_INITVAL + words * 4 + initval;
#pragma unroll
	for (; words - i > 3; i += 3) {
		a += k[i];
		b += k[i + 1];
		c += k[i + 2];
		jhash_mix(a, b, c);
	}
	switch (words - i) {
	case 3:
		c += tail_word(k[i + 2]);
		/* fallthrough */
	case 2:
		b += tail_word(k[i + 1]);
		/* fallthrough */
	case 1:
		a += tail_word(k[i]);
		jhash_final(a, b, c);
	}
	return c;
}

/* proto_word is the protocol's register: its byte, then three zero bytes. */
static __always_inline __u32 proto_word(__u8 proto)
{
	union {
		__u8 b[4];
		__u32 w;
	} r = {.b = {proto}};
	return r.w;
}

/*
 * flow_hash returns the flow hash of f (flowkey.Hash) and sets *key_len to
 * the key's length in bytes. ports_only selects SCTP's ports-only key; the
 * caller passes it only for SCTP.
 */
static __always_inline __u32 flow_hash(const struct flow *f, int ports_only, __u32 *key_len)
{
	__u32 k[FLOW_KEY_MAX_WORDS];
	__u32 proto = proto_word(f->proto);

	if (ports_only) {
		k[0] = f->ports;
		k[1] = proto;
		*key_len = 8;
		return jhash_words(k, 2, flow_seed);
	}
	if (f->family == 4) {
		k[0] = f->src[0];
		k[1] = f->dst[0];
		k[2] = f->ports;
		if (f->echo) {
			k[3] = f->ports;
			k[4] = proto;
			*key_len = 20;
			return jhash_words(k, 5, flow_seed);
		}
		k[3] = proto;
		*key_len = 16;
		return jhash_words(k, 4, flow_seed);
	}
	k[0] = f->src[0];
	k[1] = f->src[1];
	k[2] = f->src[2];
	k[3] = f->src[3];
	k[4] = f->dst[0];
	k[5] = f->dst[1];
	k[6] = f->dst[2];
	k[7] = f->dst[3];
	k[8] = f->ports;
	if (f->echo) {
		k[9] = f->ports;
		k[10] = proto;
		*key_len = 44;
		return jhash_words(k, 11, flow_seed);
	}
	k[9] = proto;
	*key_len = 40;
	return jhash_words(k, 10, flow_seed);
}

/* reciprocal_scale maps hash onto [0, n) as the kernel's (and nftables'
 * "mod n", maglev.ReciprocalScale) does. */
static __always_inline __u32 reciprocal_scale(__u32 hash, __u32 n)
{
	return (__u32)(((__u64)hash * n) >> 32);
}

#endif
