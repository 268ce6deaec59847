// Package fragment remembers where the first fragment of an IP datagram was
// sent so that its later fragments, which carry no ports, follow it to the
// same target.
//
// A Table is a fixed-size, set-associative hash table keyed by (source,
// destination, protocol, fragment id), the protocol being zero for IPv6
// (RFC 8200 section 4.5 names a datagram by source, destination and
// identification); it never allocates after New and never grows. Entries live for a short lifetime (default 2 s, the order of the
// kernel's own reassembly timeout is 30 s but a datagram's fragments arrive
// within microseconds of each other). When a set is full the oldest entry is
// evicted and counted.
//
// Later fragments that arrive before their first fragment are held: the
// caller passes an opaque token (for nfqueue, the queue and packet id) that
// the table parks in the datagram's entry, up to MaxHeld per datagram (the
// caller bounds how many it holds in all: Lookup with hold false). When
// the first fragment arrives, Remember returns the parked tokens so the
// caller can give them the first fragment's verdict; Expire returns the
// tokens whose datagram's first fragment never came, so the caller can drop
// them. Every outcome is counted in Stats.
//
// A Table is safe for concurrent use: sets are guarded by striped mutexes, so
// readers of different queues contend only when they hit the same stripe.
package fragment
