package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

const (
	bigTCPSize  = 192 << 10 // GSO/GRO size allowed on every lab link (BIG TCP)
	bigTCPPort  = 7000
	bigTCPBytes = 32 << 20
)

var bulkRoute = []e2e.Route{{Name: "bulk", Service: "service-a", Priority: 10,
	Fields: `protocols: [TCP], destinationPorts: ["7000"]`}}

// TestIntegrationBigTCPAggregatesAreBalanced: with GSO sizes above 64 KiB
// on the lab's links (IPv4 BIG TCP), a TCP upload to a VIP reaches the LB
// as aggregates over 64 KiB whose IPv4 total length is 0, flagged GSO by
// nfqueue. They must be balanced like the flow's other packets: none
// undecodable, the upload complete. With the kernel path the aggregates
// never reach the queue: the kernel balances them, and the route's counter
// (read from the kernel) covers the whole upload.
//
// IPv4 only: on this kernel (6.18) IPv6 TCP over veth never made an
// aggregate over 64 KiB, neither by TSO nor by GRO with gro_max_size
// raised (largest 64,512 bytes), so the IPv6 zero payload length (jumbo
// option or GSO) is covered by the packet and dataplane unit tests.
func TestIntegrationBigTCPAggregatesAreBalanced(t *testing.T) {
	forEachDataplane(t, testIntegrationBigTCPAggregatesAreBalanced)
}

func testIntegrationBigTCPAggregatesAreBalanced(t *testing.T, mode string) {
	require.Lab(t)
	l := dataplaneLab(t, 1, mode)
	raiseGSOSizes(t, l)
	startSinks(t, l, vip4)
	_, insts := startSllbrd(t, l, allTargets, bulkRoute, 1)
	inst := insts[0]
	if err := upload(l, vip4, bigTCPBytes); err != nil {
		t.Error(err)
	}
	largest := metricMax(t, inst, "sllbrd_nfqueue_largest_packet_bytes")
	gso, _, _ := inst.Metric("sllbrd_nfqueue_gso_packets_total")
	balanced, _, _ := inst.Metric(`sllbrd_route_packets_total{route="default/bulk"`)
	balancedBytes, _, _ := inst.Metric(`sllbrd_route_bytes_total{route="default/bulk"`)
	undecodable, _, _ := inst.Metric("sllbrd_undecodable_packets_total")
	t.Logf("largest packet from nfqueue %v bytes, %v GSO packets, %v packets (%v bytes) of the upload balanced, %v undecodable",
		largest, gso, balanced, balancedBytes, undecodable)
	if mode != dataplaneNFQueue {
		// The kernel path balances the aggregates as they are, in the
		// kernel (none reaches the queue); the route counts them whole.
		// (The eBPF datapath decides them or leaves them to it.)
		if balancedBytes < bigTCPBytes || gso != 0 {
			t.Errorf("the kernel path balanced %v bytes of the %d-byte upload and queued %v aggregates, want all and none", balancedBytes, bigTCPBytes, gso)
		}
	} else if largest <= 65535 || gso == 0 {
		t.Errorf("no aggregate over 64 KiB reached the queue (largest %v, GSO packets %v): the test proves nothing", largest, gso)
	}
	if undecodable != 0 {
		t.Errorf("%v packets undecodable, want 0", undecodable)
	}
}

// raiseGSOSizes allows GSO and GRO packets of bigTCPSize on every link of
// the lab but the switch's bridges (whose ports decide).
func raiseGSOSizes(t *testing.T, l *lab.Lab) {
	t.Helper()
	nodes := append([]string{lab.ClientNode, lab.GatewayNode, lab.SwitchNode}, append(l.LBs(), l.Targets()...)...)
	for _, node := range nodes {
		err := l.Do(node, func() error {
			ifs, err := net.Interfaces()
			if err != nil {
				return err
			}
			for _, ifc := range ifs {
				if ifc.Flags&net.FlagLoopback != 0 || (node == lab.SwitchNode && (ifc.Name == lab.GatewayLink || ifc.Name == lab.TargetLink)) {
					continue
				}
				if err := setGSOSizes(ifc.Index, bigTCPSize); err != nil {
					return fmt.Errorf("%s: %w", ifc.Name, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: raise GSO sizes: %v", node, err)
		}
	}
}

// setGSOSizes sets the link's GSO and GRO maximum sizes, IPv6 and IPv4
// (IFLA_GSO_MAX_SIZE, IFLA_GRO_MAX_SIZE, IFLA_GSO_IPV4_MAX_SIZE,
// IFLA_GRO_IPV4_MAX_SIZE; the iproute2 here predates the IPv4 ones), in the
// calling thread's namespace.
func setGSOSizes(ifindex, size int) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ne := binary.NativeEndian
	msg := make([]byte, unix.SizeofNlMsghdr+unix.SizeofIfInfomsg)
	ne.PutUint16(msg[4:], unix.RTM_NEWLINK)
	ne.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	ne.PutUint32(msg[8:], 1)
	ne.PutUint32(msg[unix.SizeofNlMsghdr+4:], uint32(ifindex))
	for _, attr := range []uint16{unix.IFLA_GSO_MAX_SIZE, unix.IFLA_GRO_MAX_SIZE, unix.IFLA_GSO_IPV4_MAX_SIZE, unix.IFLA_GRO_IPV4_MAX_SIZE} {
		msg = ne.AppendUint16(msg, 8)
		msg = ne.AppendUint16(msg, attr)
		msg = ne.AppendUint32(msg, uint32(size))
	}
	ne.PutUint32(msg[0:], uint32(len(msg)))
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	if n < unix.SizeofNlMsghdr+4 || ne.Uint16(buf[4:]) != unix.NLMSG_ERROR {
		return errors.New("rtnetlink: no acknowledgement")
	}
	if errno := -int32(ne.Uint32(buf[unix.SizeofNlMsghdr:])); errno != 0 {
		return fmt.Errorf("rtnetlink: set GSO/GRO sizes: %w", unix.Errno(errno))
	}
	return nil
}

// startSinks runs a TCP server on every target, on vip port bigTCPPort:
// each reads a connection to its end and answers with the byte count.
func startSinks(t *testing.T, l *lab.Lab, vip netip.Addr) {
	t.Helper()
	for _, target := range l.Targets() {
		var ln net.Listener
		err := l.Do(target, func() (err error) {
			ln, err = net.Listen("tcp", netip.AddrPortFrom(vip, bigTCPPort).String())
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		t.Cleanup(func() { ln.Close() })
		go serveSink(ln)
	}
}

func serveSink(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(time.Minute))
			n, _ := io.Copy(io.Discard, c)
			fmt.Fprintf(c, "%d\n", n)
		}()
	}
}

// upload sends n bytes from the client to vip:bigTCPPort and checks that
// the sink counted them all.
func upload(l *lab.Lab, vip netip.Addr, n int) error {
	return l.Do(lab.ClientNode, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(vip, bigTCPPort).String())
		if err != nil {
			return err
		}
		c := nc.(*net.TCPConn)
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		chunk := make([]byte, 1<<20)
		for sent := 0; sent < n; sent += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				return fmt.Errorf("upload after %d bytes: %w", sent, err)
			}
		}
		if err := c.CloseWrite(); err != nil {
			return err
		}
		reply, err := io.ReadAll(c)
		if err != nil {
			return fmt.Errorf("sink's answer: %w", err)
		}
		if got, err := strconv.Atoi(strings.TrimSpace(string(reply))); err != nil || got != n {
			return fmt.Errorf("sink received %q bytes, want %d", reply, n)
		}
		return nil
	})
}

// metricMax returns the largest sample of metric (0 when there is none).
func metricMax(t *testing.T, inst *e2e.Instance, metric string) float64 {
	t.Helper()
	_, body, err := inst.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var largest float64
	for line := range strings.SplitSeq(body, "\n") {
		if rest, ok := strings.CutPrefix(line, metric); ok && (rest == "" || rest[0] == '{' || rest[0] == ' ') {
			f := strings.Fields(line)
			if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil && v > largest {
				largest = v
			}
		}
	}
	return largest
}
