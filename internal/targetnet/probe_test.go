package targetnet

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// TestProbeAddressProtocol: a kernel that keeps IFA_PROTO passes and is
// left as it was; one that drops it (before 5.18) is refused with a
// message naming what is needed, and is left as it was too.
func TestProbeAddressProtocol(t *testing.T) {
	for _, tc := range []struct {
		name      string
		old       bool
		leftover  bool // a probe that was interrupted left its address
		wantError string
	}{
		{name: "IFA_PROTO kept"},
		{name: "a leftover probe address", leftover: true},
		{name: "IFA_PROTO dropped (before 5.18)", old: true, wantError: "needs Linux 5.18 or later"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newFakeKernel()
			k.dropsProtocol = tc.old
			before := slices.Clone(k.addrs)
			if tc.leftover {
				k.addrs = append(k.addrs, Address{LinkIndex: 1, Prefix: probeAddress, Protocol: Protocol})
			}
			err := ProbeAddressProtocol(k)
			switch {
			case tc.wantError == "" && err != nil:
				t.Fatalf("ProbeAddressProtocol: %v", err)
			case tc.wantError != "" && (!errors.Is(err, ErrNoAddressProtocol) || !strings.Contains(err.Error(), tc.wantError)):
				t.Fatalf("ProbeAddressProtocol = %v, want %v saying %q", err, ErrNoAddressProtocol, tc.wantError)
			}
			if !slices.Equal(k.addrs, before) {
				t.Errorf("the probe left the addresses %v, want %v", k.addrs, before)
			}
		})
	}
}

// TestProbeAddressProtocolFailures: a kernel that refuses the probe's
// address, or cannot list addresses, fails the probe with the cause, and
// the probe address is not left behind.
func TestProbeAddressProtocolFailures(t *testing.T) {
	k := newFakeKernel()
	k.fail = func(op string) error {
		if strings.HasPrefix(op, "add address") {
			return errors.New("EPERM")
		}
		return nil
	}
	if err := ProbeAddressProtocol(k); err == nil || !strings.Contains(err.Error(), "add 127.83.76.66/32 on lo: EPERM") {
		t.Errorf("with the address refused: %v", err)
	}
	noLo := newFakeKernel()
	noLo.links = noLo.links[1:]
	if err := ProbeAddressProtocol(noLo); err == nil || !strings.Contains(err.Error(), "no interface lo") {
		t.Errorf("without lo: %v", err)
	}
	if slices.ContainsFunc(k.addrs, func(a Address) bool { return a.Prefix == probeAddress }) {
		t.Errorf("the probe address was left: %v", k.addrs)
	}
}

// TestIntegrationProbeLeavesNothing: on the real kernel (which keeps
// IFA_PROTO) the probe passes, with lo down (NewNetlinkKernel's) and up,
// and leaves lo's addresses as they were.
func TestIntegrationProbeLeavesNothing(t *testing.T) {
	require.Root(t)
	require.Programs(t, "ip")
	ns, fd := netns.New(t, "sllbrd-tnet-probe")
	loAddrs := func() string { return netns.In(t, ns, "ip", "-o", "addr", "show", "dev", "lo") }
	before := loAddrs()
	k, err := NewNetlinkKernel(fd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	if after := loAddrs(); after != before {
		t.Errorf("lo (down) before the probe:\n%safter:\n%s", before, after)
	}
	netns.In(t, ns, "ip", "link", "set", "lo", "up")
	before = loAddrs()
	if err := ProbeAddressProtocol(k); err != nil {
		t.Fatal(err)
	}
	if after := loAddrs(); after != before || !strings.Contains(after, "127.0.0.1/8") {
		t.Errorf("lo (up) before the probe:\n%safter:\n%s", before, after)
	}
}
