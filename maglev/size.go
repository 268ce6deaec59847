package maglev

import "fmt"

// Limits and the default sizing rule (see the package documentation).
const (
	// MaxSlots is the largest N: slot identifiers are stored as uint16 and
	// one value is reserved to mark empty entries while building.
	MaxSlots = 1<<16 - 1
	// MaxSize is the largest table size M (16 Mi entries, 32 MiB).
	MaxSize = 1 << 24
	// MinSize is the smallest default table size: a prime near 2^14, so
	// that a Service's table is a small nftables map (about 1.5 MiB of
	// kernel memory per address family) while few flows move needlessly
	// on a change (see the package documentation).
	MinSize = 16381
	// SizeFactor is the default number of table entries per slot.
	SizeFactor = 150
)

// DefaultSize returns the default table size for n slots: the smallest
// prime that is at least max(MinSize, SizeFactor*n).
func DefaultSize(n int) (int, error) {
	if n < 1 || n > MaxSlots {
		return 0, fmt.Errorf("maglev: %d slots: want 1..%d", n, MaxSlots)
	}
	m := max(MinSize, SizeFactor*n)
	for !isPrime(m) {
		m++
	}
	return m, nil
}

// validateSize reports whether m is a usable table size for n slots.
func validateSize(m, n int) error {
	switch {
	case m <= n:
		return fmt.Errorf("maglev: table size %d: must exceed the %d slots", m, n)
	case m > MaxSize:
		return fmt.Errorf("maglev: table size %d: exceeds the maximum %d", m, MaxSize)
	case !isPrime(m):
		return fmt.Errorf("maglev: table size %d: not prime", m)
	}
	return nil
}

// isPrime tests primality by trial division, fast enough below MaxSize.
func isPrime(m int) bool {
	if m < 2 {
		return false
	}
	if m%2 == 0 {
		return m == 2
	}
	for d := 3; d*d <= m; d += 2 {
		if m%d == 0 {
			return false
		}
	}
	return true
}
