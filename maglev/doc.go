// Package maglev builds Maglev consistent-hashing lookup tables (Eisenbud et
// al., "Maglev: A Fast and Reliable Software Network Load Balancer", NSDI
// 2016) and provides the flow hash that indexes them.
//
// # Slots, not names
//
// A Service has N slots with the stable identifiers 0..N-1 (N is the
// Service's maximum number of endpoints). The permutation of a slot, its
// (offset, skip) pair, depends only on the slot identifier and the table size
// M, through Hash with the fixed seeds OffsetSeed and SkipSeed applied to the
// identifier as 8 little-endian bytes. It never depends on an endpoint's name
// or address, on Go's per-process hash seed, nor on the machine. Two processes
// (or two load balancer instances) given the same N, M and set of active
// slots therefore build byte-identical tables and send every flow to the same
// slot. A golden test pins the tables and the flow hash.
//
// # Table size M
//
// M must be prime and greater than N. DefaultSize(N) is the smallest prime
// that is at least max(MinSize, SizeFactor*N) = max(65537, 100*N): 65537
// (the paper's size, 128 KiB of uint16 entries) for N <= 655, then about 100
// entries per slot (N=1000 -> 100003, N=5000 -> 500009). The floor is what
// keeps disruption low for small N: the flows that move needlessly when one
// endpoint is removed or added shrink as M/N grows, and with 100 entries per
// slot they reach 2.5-2.7% for N=10..32 (measured), against at most 0.9%
// with this rule for every N tested (3..5000). WithSize sets an explicit M
// (e.g. NFQLB's 997 for a small table), which must be prime, greater than N
// and at most MaxSize.
//
// # Building and looking up
//
// NewParams fixes N and M and computes every slot's permutation once; Build
// takes the set of active slots (a []bool of length N) and returns a new,
// immutable *Table. Only active slots receive entries. Every active slot gets
// either floor(M/A) or ceil(M/A) of the M entries (A = active slots). With no
// active slot, Build succeeds and Lookup reports ok=false. Build always
// terminates: every round of the populate loop fills at least one entry, and
// it costs O(M log M) steps on average (O(M*N) at worst) plus O(M) memory.
//
// A *Table is never modified after Build returns, so any number of
// goroutines may call Lookup concurrently. To change the endpoints, build a
// new table off the hot path and publish it with an atomic.Pointer[Table]
// Store; readers Load the pointer and so see either the old or the new table,
// never a half-built one. Lookup on a nil *Table reports ok=false, so an
// unset atomic.Pointer needs no special case.
//
// Lookup maps a 64-bit flow hash to an entry by multiply-high range reduction
// (the high 64 bits of hash*M), which uses the high-order bits of the hash:
// it costs a few nanoseconds and allocates nothing.
//
// # Flow hash
//
// Hash is a fixed, seeded 64-bit hash over a byte key (the dataplane hashes a
// flow key of up to 40 bytes: addresses, ports, protocol). It reads the key 8
// bytes at a time in little-endian order, explicitly, so the result is the
// same on every architecture and in every process. It allocates nothing. It
// is not a cryptographic hash and not resistant to hash flooding: its seed is
// public so that all instances agree.
package maglev
