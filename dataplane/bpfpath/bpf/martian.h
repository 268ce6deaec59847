/*
 * martian.h: the sources the kernel never forwards from. The program hands
 * a packet from one to the stack (which drops it) instead of forwarding it
 * itself, so that redirecting opens no path the stack would refuse.
 */
#ifndef SLLBRD_MARTIAN_H
#define SLLBRD_MARTIAN_H

#include "kernel.h"

/*
 * martian_source reports whether src, an address of family (4 or 6) as
 * the packet's bytes (IPv4 in src[0]), is a source the kernel drops or
 * does not forward from: in IPv4 0.0.0.0/8, 127.0.0.0/8, multicast
 * 224.0.0.0/4 and 255.255.255.255 (ip_route_input_slow's martian sources);
 * in IPv6 ::, ::1, ::ffff:0:0/96 (ip6_rcv_core drops the loopback,
 * IPv4-mapped and multicast ones), fe80::/10 (ip6_forward does not forward
 * link-local ones) and ff00::/8. Reverse path filtering (rp_filter) is not
 * done: it needs the FIB.
 */
static __always_inline int martian_source(__u8 family, const __u32 *src)
{
	const __u8 *s = (const __u8 *)src;
	union {
		__u8 b[4];
		__u32 w;
	} ffff = {.b = {0, 0, 0xff, 0xff}}, one = {.b = {0, 0, 0, 1}};

	if (family == 4)
		return s[0] == 0 || s[0] == 127 || (s[0] & 0xf0) == 0xe0 || src[0] == 0xffffffff;
	if (s[0] == 0xff || (s[0] == 0xfe && (s[1] & 0xc0) == 0x80))
		return 1;
	if (src[0] != 0 || src[1] != 0)
		return 0;
	if (src[2] == ffff.w)
		return 1; /* IPv4-mapped */
	return src[2] == 0 && (src[3] == 0 || src[3] == one.w);
}

#endif
