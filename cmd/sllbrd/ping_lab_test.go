package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
)

// TestIntegrationFragmentedPingReachesATarget: a ping too big for the path
// (3000 bytes, sent as three fragments, for half of the pings the later
// fragments first) is balanced by the echo rule and answered by a target,
// in both families.
func TestIntegrationFragmentedPingReachesATarget(t *testing.T) {
	forEachDataplane(t, testIntegrationFragmentedPingReachesATarget)
}

func testIntegrationFragmentedPingReachesATarget(t *testing.T, mode string) {
	require.Lab(t)
	l := dataplaneLab(t, 1, mode)
	bpfPuntsAll(t, l)
	_, insts := startSllbrd(t, l, allTargets, webRoute, 1)
	const pings = 10
	for _, vip := range []netip.Addr{vip4, vip6} {
		client := lab.ClientAddrs().For(vip)
		var replies map[uint16]int
		err := l.Do(lab.ClientNode, func() error {
			rx, err := openEchoReplies(vip)
			if err != nil {
				return err
			}
			defer unix.Close(rx)
			for id := uint16(1); id <= pings; id++ {
				frags := testpkt.EchoFragments(client, vip, id, 1, make([]byte, 3000), 1200, uint32(id))
				if id%2 == 0 { // later fragments first: held until the first comes
					frags = append(frags[1:], frags[0])
				}
				for _, f := range frags {
					if err := sendRaw(vip, f); err != nil {
						return err
					}
				}
			}
			replies, err = readEchoReplies(rx, vip, pings, 10*time.Second)
			return err
		})
		if err != nil {
			t.Fatalf("%v: %v", vip, err)
		}
		for id := uint16(1); id <= pings; id++ {
			if n := replies[id]; n != 3000+8 {
				t.Errorf("%v: echo %d answered with %d bytes of ICMP, want 3008 (the whole ping)", vip, id, n)
			}
		}
	}
	held, _, err := insts[0].Metric(`sllbrd_packets_total{reason="fragment_held"}`)
	if err != nil || held < pings { // half the pings hold two fragments
		t.Errorf("fragments held before their first: %v (err %v), want >= %d", held, err, pings)
	}
}

// openEchoReplies opens a raw ICMP socket of vip's family in the calling
// thread's namespace. The kernel hands it every ICMP message, reassembled.
func openEchoReplies(vip netip.Addr) (int, error) {
	family, proto := unix.AF_INET, unix.IPPROTO_ICMP
	if vip.Is6() {
		family, proto = unix.AF_INET6, unix.IPPROTO_ICMPV6
	}
	fd, err := unix.Socket(family, unix.SOCK_RAW, proto)
	if err != nil {
		return -1, fmt.Errorf("raw icmp socket: %w", err)
	}
	tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// readEchoReplies reads echo replies from vip until want distinct
// identifiers answered or the timeout, and returns the ICMP message length
// of each identifier's reply.
func readEchoReplies(fd int, vip netip.Addr, want int, timeout time.Duration) (map[uint16]int, error) {
	got := map[uint16]int{}
	buf := make([]byte, 9000)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for len(got) < want && ctx.Err() == nil {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil {
			return got, fmt.Errorf("receive echo replies: %w", err)
		}
		msg := buf[:n]
		if vip.Is4() { // IPv4 raw sockets deliver the IP header too
			if n < 20 || n < int(msg[0]&0x0f)*4 {
				continue
			}
			msg = msg[int(msg[0]&0x0f)*4:]
		}
		const echoReply4, echoReply6 = 0, 129
		if len(msg) < 8 || !fromAddr(from, vip) || (vip.Is4() && msg[0] != echoReply4) || (vip.Is6() && msg[0] != echoReply6) {
			continue
		}
		got[binary.BigEndian.Uint16(msg[4:6])] = len(msg)
	}
	return got, nil
}

func fromAddr(sa unix.Sockaddr, want netip.Addr) bool {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrFrom4(a.Addr) == want
	case *unix.SockaddrInet6:
		return netip.AddrFrom16(a.Addr) == want
	}
	return false
}
