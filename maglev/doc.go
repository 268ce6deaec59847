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
// that is at least max(MinSize, SizeFactor*N) = max(16381, 150*N): 16381 for
// N <= 109, then about 150 entries per slot (N=1000 -> 150001). The table is
// also an nftables map in the kernel (one element per entry, about 95 bytes
// of kernel memory each), so M is kept small; the floor and the factor are
// what keep disruption low: the flows that move needlessly when one endpoint
// is removed or added stay below 1.6% of all flows for every N measured
// (3..500, TestDisruption bounds them at 2%), against 2.5-2.7% with 100
// entries per slot for N=10..32. WithSize sets an explicit M (e.g. NFQLB's
// 997 for a small table), which must be prime, greater than N and at most
// MaxSize.
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
// (the high 64 bits of hash*M), which uses the high-order bits of the hash.
// Lookup32 maps a 32-bit hash h to entry ReciprocalScale(h, M) = (h*M)>>32,
// which is what nftables' "jhash ... mod M" computes in the kernel. Both cost
// a few nanoseconds and allocate nothing.
//
// # Hashes
//
// Hash is a fixed, seeded 64-bit hash over a byte key; the slot
// permutations use it. It reads the key 8 bytes at a time in little-endian
// order, explicitly, so the result is the same on every architecture and in
// every process.
//
// JHash is the flow hash: the Linux kernel's jhash (Bob Jenkins' lookup3),
// bit for bit, so that the userspace dataplane and nftables' "jhash"
// expression pick the same entry for a flow (with FlowSeed and Lookup32).
// Like the kernel's, it reads all but the last 12 bytes of the key in the
// CPU's byte order: instances on machines of the same byte order agree
// (every 64-bit architecture sllbrd is built for is little-endian).
// testdata/kernel-jhash.txt holds values the kernel's nftables jhash
// computed at every flow key length (8, 16, 20, 40, 44 bytes), which a
// unit test checks JHash against; a root test re-derives them.
//
// Neither allocates, and neither is a cryptographic hash or resistant to
// hash flooding: the seeds are public so that all instances agree.
package maglev
