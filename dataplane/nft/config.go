package nft

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
)

// Config is the desired content of the table.
type Config struct {
	// VIPs are the addresses whose traffic is queued; IPv4 (including
	// IPv4-mapped IPv6, which is unmapped) go to set vips4, IPv6 to vips6.
	VIPs []netip.Addr
	// Queues are the nfqueue numbers traffic is spread over.
	Queues QueueRange
	// Fanout spreads by CPU instead of by flow hash.
	Fanout bool
	// Kernel, when set, decides VIP packets in the kernel (see FastPath);
	// nil queues them all.
	Kernel *FastPath
}

// QueueRange is the queue numbers First .. First+Count-1.
type QueueRange struct {
	First uint16
	Count uint16
}

// ErrInvalidConfig is wrapped by every validation error.
var ErrInvalidConfig = errors.New("invalid nft config")

// Validate reports whether c can be programmed.
func (c Config) Validate() error {
	if c.Queues.Count == 0 {
		return fmt.Errorf("%w: queue count is 0", ErrInvalidConfig)
	}
	if int(c.Queues.First)+int(c.Queues.Count)-1 > 0xffff {
		return fmt.Errorf("%w: queues %d+%d exceed 65535", ErrInvalidConfig, c.Queues.First, c.Queues.Count)
	}
	for _, a := range c.VIPs {
		if !a.IsValid() || a.Unmap().IsUnspecified() {
			return fmt.Errorf("%w: VIP %q", ErrInvalidConfig, a)
		}
	}
	if c.Kernel != nil {
		return c.Kernel.validate(c.VIPs)
	}
	return nil
}

// splitVIPs returns the distinct IPv4 and IPv6 VIPs, sorted.
func (c Config) splitVIPs() (v4, v6 []netip.Addr) {
	for _, a := range c.VIPs {
		a = a.Unmap()
		if a.Is4() {
			v4 = append(v4, a)
		} else {
			v6 = append(v6, a.WithZone(""))
		}
	}
	slices.SortFunc(v4, netip.Addr.Compare)
	slices.SortFunc(v6, netip.Addr.Compare)
	return slices.Compact(v4), slices.Compact(v6)
}
