package main

import (
	"context"
	"maps"
	"net/netip"
	"regexp"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
)

// TestIntegrationICMPErrorsReachTheFlowsTarget: a fragmentation-needed or
// packet-too-big error, and a parameter problem, about a target's reply,
// sent by the gateway to the VIP, reaches the target that serves the flow
// (PMTU discovery through the LB) and no other.
func TestIntegrationICMPErrorsReachTheFlowsTarget(t *testing.T) {
	forEachDataplane(t, testIntegrationICMPErrorsReachTheFlowsTarget)
}

func testIntegrationICMPErrorsReachTheFlowsTarget(t *testing.T, mode string) {
	l := dataplaneLab(t, 1, mode)
	startSllbrd(t, l, allTargets, webRoute, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 1; i <= 3; i++ {
		countICMPErrors(t, ctx, l, lab.TargetName(i))
	}
	want := map[string]int{}
	for i := 1; i <= 3; i++ {
		want[lab.TargetName(i)] = 0
	}
	for _, vip := range []netip.Addr{vip4, vip6} {
		served := flows(t, l, lab.FlowOptions{VIP: vip, Port: 5002, Count: 30, SrcPortBase: 31000})
		for f, target := range served {
			reply := testpkt.Packet(testpkt.Flow{Src: f.Dst.Addr(), Dst: f.Src.Addr(), Proto: 17,
				SrcPort: f.Dst.Port(), DstPort: f.Src.Port()}, make([]byte, 1400), testpkt.Options{})
			gw := lab.GatewayAddrs().For(vip)
			errs := [][]byte{testpkt.ICMPError(gw, reply, testpkt.ICMPv4Unreachable, testpkt.ICMPv4FragNeeded, 1300),
				testpkt.ICMPError(gw, reply, icmpv4ParamProblem, 0, 0)}
			if vip.Is6() {
				errs = [][]byte{testpkt.ICMPError(gw, reply, testpkt.ICMPv6PacketTooBig, 0, 1300),
					testpkt.ICMPError(gw, reply, icmpv6ParamProblem, 0, 0)}
			}
			for _, icmp := range errs {
				if err := l.Do(lab.GatewayNode, func() error { return sendRaw(vip, icmp) }); err != nil {
					t.Fatal(err)
				}
				want[target]++
			}
		}
	}
	// Every error reaches exactly one target: poll until each has its own
	// (a misrouted error leaves its target short, so this never passes
	// early), at most 10 s.
	got := map[string]int{}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for i := 1; i <= 3; i++ {
			got[lab.TargetName(i)] = readICMPErrors(t, ctx, l, lab.TargetName(i))
		}
		if maps.Equal(got, want) || time.Now().After(deadline) {
			break
		}
	}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("%s received %d ICMP errors, want %d (one per error about a flow it serves)", name, got[name], n)
		}
	}
	t.Logf("ICMP errors per target: %v", want)
}

// sendRaw sends a whole IP packet (header included) towards dst.
func sendRaw(dst netip.Addr, pkt []byte) error {
	if dst.Is4() {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Sendto(fd, pkt, 0, &unix.SockaddrInet4{Addr: dst.As4()})
	}
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_RAW)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Sendto(fd, pkt, 0, &unix.SockaddrInet6{Addr: dst.As16()})
}

// ICMP parameter problem types (RFC 792, RFC 4443 section 3.4).
const icmpv4ParamProblem, icmpv6ParamProblem = 12, 4

// countICMPErrors installs, in node, an nft counter of received
// unreachable, packet-too-big and parameter-problem errors.
func countICMPErrors(t *testing.T, ctx context.Context, l *lab.Lab, node string) {
	t.Helper()
	for _, args := range [][]string{
		{"nft", "add", "table", "inet", "e2e"},
		{"nft", "add", "chain", "inet", "e2e", "in", "{ type filter hook input priority 0; }"},
		{"nft", "add", "rule", "inet", "e2e", "in", "icmp", "type", "destination-unreachable", "counter"},
		{"nft", "add", "rule", "inet", "e2e", "in", "icmpv6", "type", "packet-too-big", "counter"},
		{"nft", "add", "rule", "inet", "e2e", "in", "icmp", "type", "parameter-problem", "counter"},
		{"nft", "add", "rule", "inet", "e2e", "in", "icmpv6", "type", "parameter-problem", "counter"},
	} {
		if out, err := l.Exec(ctx, node, args...); err != nil {
			t.Fatalf("%s: %v: %s", node, err, out)
		}
	}
}

var packetsRE = regexp.MustCompile(`counter packets (\d+)`)

func readICMPErrors(t *testing.T, ctx context.Context, l *lab.Lab, node string) int {
	t.Helper()
	out, err := l.Exec(ctx, node, "nft", "list", "table", "inet", "e2e")
	if err != nil {
		t.Fatalf("%s: %v: %s", node, err, out)
	}
	total := 0
	for _, m := range packetsRE.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		total += n
	}
	return total
}
