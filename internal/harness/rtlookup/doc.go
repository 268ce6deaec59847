// Package rtlookup asks the kernel how it would route one packet
// (RTM_GETROUTE, as `ip route get`), for tests that watch routes change
// under traffic.
//
// Get sends one request on a NETLINK_ROUTE socket and decodes the answer:
// route type, the table the route was found in and its gateway. Unlike
// rtnetlink/v2 it encodes RTA_SRC, RTA_IIF and RTA_MARK, so a test can ask
// how a packet from a VIP, arriving on an interface, carrying a firewall
// mark, is routed: the path the policy rules select.
//
// Watch runs such lookups in a loop, on a socket in a named namespace,
// until it is stopped, and counts the answers a check rejects: a test
// changes routes meanwhile and asserts that no lookup ever found no route
// (a delete-then-add window). The loop is bounded by its caller's changes:
// it runs only between Watch and the stop function it returns.
package rtlookup
