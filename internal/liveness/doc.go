// Package liveness checks that addresses answer ICMP (IPv4) and ICMPv6 echo
// requests, so that an SLLBR finds on its own, within a second, the
// endpoints it must stop sending new flows to (issue 23). It knows nothing
// of Kubernetes: the caller says what to probe (Set) and hears what changed
// (WithOnChange, States, Dead).
//
// # Layers
//
//   - codec.go: the echo request and reply of RFC 792 and RFC 4443
//     (Echo.DecodeIPv4, Echo.DecodeICMPv6, AppendEchoRequest). Decoding
//     never allocates, never panics and never reads outside its input.
//   - machine.go: the state of one address. It performs no I/O and reads
//     no clock.
//   - prober.go, schedule.go, probe.go: the Prober: which address is probed
//     when, the sequence numbers in flight, reply validation.
//   - socket.go, run.go: raw sockets and the loop that sends and reads.
//
// # Contract
//
// State machine, per address (an address is probed once whatever the
// number of Services listing it; the caller merges their Configs with
// Config.Stricter):
//   - A new address starts alive (the API said it is ready).
//   - Alive -> dead once Multiplier consecutive intervals have passed
//     without a valid reply; each probe opens an interval, which the next
//     probe ends. A probe that cannot be sent (no route, EPERM, ...) is a
//     miss like any other, so a broken local side makes every address
//     dead. Misses count probes sent, not time: a stalled prober finds no
//     one dead for its own stall. A target that stops answering is dead
//     between Detection and Detection + Interval after its last reply. An
//     address that has never answered is dead no sooner than Detection +
//     FirstReplyGrace after it was added (its first probes may wait that
//     long in the kernel's neighbour resolution).
//   - Dead -> alive on a valid reply once replies have kept coming for
//     HoldDown since the first valid reply of the recovery, with no run of
//     Multiplier missed intervals (a run restarts the recovery); HoldDown
//     0: the first valid reply. A target that answers again is alive
//     between HoldDown and about HoldDown + 2 × Interval later (its first
//     reply within an interval, then alive at the first reply once
//     HoldDown has passed).
//   - Set keeps the state of an address it keeps (its new Config applies
//     from its next probe, which a shorter interval brings within two new
//     intervals) and forgets one it drops, without a Change.
//
// Probing: each address is probed every Interval on a fixed schedule (a
// late prober sends late, never early), so the bounds above hold but for
// the prober's own lateness. Addresses of the same Interval are probed in
// groups of at most 32 that go out together, in one wake-up: a new address
// joins the fullest group of its Interval that has room (so a few
// addresses cost one wake-up per interval, not one each), else starts a
// group at a phase of its own, spread over the interval by a
// low-discrepancy sequence (so 1,000 addresses go out as bursts of at most
// 32, evenly spread). An address whose Interval changes moves to a group of
// the new Interval; its next probe comes no sooner than the shorter of the
// two Intervals after its previous one.
//
// Replies (never trusted): a raw socket's kernel filter (ICMP_FILTER,
// ICMP6_FILTER) passes echo replies only; then a reply is valid only if it
// decodes (IPv4 header and total length, ICMP checksum; the kernel
// verifies ICMPv6 checksums on raw ICMPv6 sockets, which New checks), is an
// echo reply with code 0, carries the prober's identifier (random per
// Prober), comes from a probed address, carries a sequence number sent to
// that very address no longer ago than its Detection and not answered yet,
// and echoes the probe's random 8-byte data. Anything else is counted
// (Stats.Ignored, by reason) and changes nothing, so a reply cannot be
// forged by one who did not see the probe.
//
// Concurrency: Set, States, Dead and Stats may be called from any
// goroutine, before, during and after Run. Run sends and reads on one
// goroutine and calls no socket under the Prober's lock; the OnChange
// function is called from another goroutine, in order, without the lock,
// with the changes decided in one pass of the loop together.
//
// Zero allocations per probe sent and per reply received in steady state
// (tests pin it with testing.AllocsPerRun).
//
// Sockets: New opens them in the calling thread's network namespace; a
// caller locked into a namespace (internal/harness/netns.Do) gets them
// there, whichever goroutine then calls Run. Raw sockets need CAP_NET_RAW.
package liveness
