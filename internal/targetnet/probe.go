package targetnet

import (
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// ErrNoAddressProtocol is ProbeAddressProtocol's failure on a kernel that
// ignores IFA_PROTO (before Linux 5.18, unless backported).
var ErrNoAddressProtocol = errors.New("the kernel ignores IFA_PROTO on addresses")

// probeAddress is the address ProbeAddressProtocol adds on lo for a
// moment: inside 127.0.0.0/8, which lo already makes local, so adding and
// removing it changes nothing else in the namespace.
var probeAddress = netip.MustParsePrefix("127.83.76.66/32")

// ProbeAddressProtocol checks that the kernel keeps an address's IFA_PROTO,
// on which the Applier's ownership of VIP addresses rests: it adds
// probeAddress on lo with Protocol, reads it back and removes it. Kernels
// before 5.18 accept the attribute and drop it silently: there every VIP
// sllbrd added would look foreign (reported as a conflict and never
// removed), and no other per-address marker exists in both families (a
// label is IPv4's only; the route metric attribute has a meaning of its
// own), so such a kernel is refused with ErrNoAddressProtocol and a
// message that says what is needed. It tests the behaviour, not the
// version, so a distribution kernel with IFA_PROTO backported passes.
// NewNetlinkKernel calls it.
func ProbeAddressProtocol(k Kernel) error {
	links, err := k.Links()
	if err != nil {
		return fmt.Errorf("probe IFA_PROTO: %w", err)
	}
	var lo uint32
	for _, l := range links {
		if l.Name == Loopback {
			lo = l.Index
		}
	}
	if lo == 0 {
		return fmt.Errorf("probe IFA_PROTO: no interface %s", Loopback)
	}
	probe := Address{LinkIndex: lo, Prefix: probeAddress, Protocol: Protocol}
	_ = k.DeleteAddress(probe) // left by a probe that was interrupted; usually absent
	if err := k.AddAddress(probe); err != nil {
		return fmt.Errorf("probe IFA_PROTO: add %s on %s: %w", probe.Prefix, Loopback, err)
	}
	addrs, listErr := k.Addresses()
	if err := k.DeleteAddress(probe); err != nil {
		return fmt.Errorf("probe IFA_PROTO: remove %s from %s: %w", probe.Prefix, Loopback, err)
	}
	if listErr != nil {
		return fmt.Errorf("probe IFA_PROTO: %w", listErr)
	}
	for _, a := range addrs {
		if a.LinkIndex != lo || a.Prefix != probe.Prefix {
			continue
		}
		if a.Protocol == Protocol {
			return nil
		}
		return fmt.Errorf("%w (%s added on %s with protocol %d reads back with %d; kernel %s): sllbrd target tells "+
			"its VIP addresses from the pod's own by it and needs Linux 5.18 or later, or a kernel with IFA_PROTO backported",
			ErrNoAddressProtocol, probe.Prefix, Loopback, Protocol, a.Protocol, kernelRelease())
	}
	return fmt.Errorf("probe IFA_PROTO: %s added on %s is not listed", probe.Prefix, Loopback)
}

// kernelRelease is uname -r, for messages.
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Release[:])
}
