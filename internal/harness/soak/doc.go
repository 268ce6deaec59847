// Package soak is the pure logic of the soak test (TestIntegrationSoak):
// what it records, the fault schedule it follows, how it judges the
// traffic it saw and the state it left. Nothing here touches the kernel,
// the cluster or the lab (it never imports internal/harness/lab): the test
// converts the lab's probe results to Samples and its executed faults to
// Events, and this package does the rest deterministically, so every rule
// is unit-tested.
//
//   - Sample and Recorder: one probe's outcome, and a concurrency-safe log
//     of them.
//   - Spec, Plan and Fault: a seeded, deterministic fault schedule. Every
//     fault kind appears at least once (a shuffled first round), then kinds
//     are picked by weight. Faults whose windows [At, At+Hold+Settle)
//     overlap never share a target, never break a kind's Excludes (in
//     either direction), and at most MaxOverlap are active at once; every
//     fault is reverted (At+Hold) by the duration minus the tail.
//   - Event and Analyze: loss runs per probe series, stream stalls and
//     breaks, target moves of fixed flows, each attributed to the executed
//     faults whose window [Start, End+settle] it overlaps; what no fault
//     explains is listed as such.
//   - Report and Markdown: the per-fault-kind report (loss window
//     p50/p99/max against the kind's documented bound, longest stream
//     stall, broken connections and why), each loss run and stall charged
//     to the one fault of the largest bound it falls in.
//   - Resources and Flat: resource figures before and after, compared with
//     a relative tolerance and an absolute floor.
//   - NormalizeRuleset and Diff: `nft -j list ruleset` to a canonical text
//     without handles and runtime state (counter values, quota use, set
//     element expiry and timeouts), and a short line diff of two texts.
//
// Sample kinds: a kind starting with "stream" is a long-lived TCP stream
// (a sample is a stall, Err "", or its break, Err set); every other kind is
// a probe (Err "" answered). Fixed-flow kinds starting with "udp" or
// "frag" are checked for target moves. Sample.At is when the probe or
// exchange was sent; RTT is how long it took (for a failure: how long it
// was waited for).
package soak
