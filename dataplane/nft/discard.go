package nft

import "math"

// discard empties c's queue without committing any of it, after queueing
// failed part-way: otherwise the next Flush (the next Program, Cleanup at
// exit) would commit what was queued before the failure together with its
// own operations, or, with google/nftables, fail with the old error and
// drop its own. google/nftables has no call that drops its queue, so the
// queue is sent with a ruleset generation older than gen (read before
// queueing; the kernel's generation only grows): the kernel refuses such a
// batch whole with ERESTART before it reads any operation of it
// (nfnetlink_rcv_batch). When one of google/nftables' own queueing calls
// failed, its Flush sends nothing at all and returns that failure. Either
// way nothing is committed and the queue is empty afterwards; the result
// of the flush says nothing more and is ignored.
func discard(c Conn, gen uint32) {
	_ = c.FlushWithGenID(olderGeneration(gen))
}

// olderGeneration returns a ruleset generation the kernel no longer has
// once it had gen. Generation 0 means "no check" in a batch and the kernel
// skips it when its counter wraps.
func olderGeneration(gen uint32) uint32 {
	if gen <= 1 {
		return math.MaxUint32
	}
	return gen - 1
}
