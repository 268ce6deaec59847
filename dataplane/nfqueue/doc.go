// Package nfqueue is sllbrd's zero-allocation receive/verdict loop for the
// Linux netfilter queue (nfnetlink_queue), spoken directly over a raw
// AF_NETLINK/NETLINK_NETFILTER socket.
//
// A Queue binds one kernel queue number. Its Run loop receives up to a batch
// of queued packets per syscall (recvmmsg into preallocated buffers), parses
// each NFQNL_MSG_PACKET in place, calls the Handler synchronously for every
// packet, and then sends the verdicts of the whole batch (NFQNL_MSG_VERDICT
// with NFQA_VERDICT_HDR and optionally NFQA_MARK) in one sendmsg.
//
// What it promises:
//   - No heap allocation per packet or per batch on the receive, parse,
//     handle and verdict path (pinned by tests with testing.AllocsPerRun).
//   - Fail closed: the fail-open flag is never set, so when no reader is bound
//     or the kernel queue overflows the kernel drops packets; a packet that
//     cannot be parsed gets a Drop verdict; a Verdict the Handler leaves
//     untouched is Drop.
//   - Every packet gets exactly one verdict, except those the Handler marks
//     Hold: those wait in the kernel until (*Queue).Release gives their
//     verdict (or the queue is closed, which drops them).
//   - Kernel overflow does not break the socket (NETLINK_NO_ENOBUFS); the
//     kernel's own drop counters are read from /proc/net/netfilter/
//     nfnetlink_queue with ReadProcStats. Held packets count against the
//     queue length (Queue.MaxLen): callers bound how many they hold.
//   - GSO/GRO aggregates are queued whole (NFQA_CFG_F_GSO, WithGSO) and
//     flagged in Packet.SkbInfo (SkbGSO); Stats counts them and keeps the
//     largest packet length seen.
//
// Group opens the queues [first, first+n) with one reader goroutine each.
package nfqueue
