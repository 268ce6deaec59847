package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// bfdReflector is the target side of many single-hop BFD sessions at once,
// for the scale lab: package bfd's Server keys its sessions by peer
// address, so one of it per endpoint address would need a namespace each.
// In each target namespace it listens on one UDP socket per family on port
// 3784, holding every address of the namespace, and answers each valid
// control packet (RFC 5880 section 6.8.6) at once: from the packet's
// destination address to the sender's port 3784, TTL 255 (RFC 5881), with
// its own discriminator per (sender, destination) pair, Your Discriminator
// the packet's My Discriminator, Final when the packet polls, and its state
// following the three-way handshake (Down -> Init on Down, -> Up on Init or
// Up; Up -> Down on Down or AdminDown). It sends nothing on its own: the
// SLLBR hears it exactly as often as it speaks, so a stalled SLLBR
// transmitter shows as its own sessions expiring.
type bfdReflector struct {
	timing bfd.Packet // the intervals and multiplier it advertises
	conns  []*net.UDPConn
	wg     sync.WaitGroup

	mu       sync.Mutex
	rng      *rand.Rand
	sessions map[[2]netip.Addr]*reflected // by (sender, destination)
	discs    map[uint32]bool
	counts   reflectorCounts
}

// reflected is one session of the reflector.
type reflected struct {
	disc  uint32
	state bfd.State
	up    time.Time // when it first came Up
}

// reflectorCounts are the reflector's counters since it started.
type reflectorCounts struct {
	Received, Sent uint64 // valid control packets received, answers sent
	// BadTTL, Invalid and Mismatched count the packets dropped: a TTL or
	// hop limit other than 255, failing Unmarshal's checks, a Your
	// Discriminator not the session's.
	BadTTL, Invalid, Mismatched uint64
	SendErrors, ReadErrors      uint64
	Up                          int // sessions Up now
	Downs                       int // times a session left Up
	LastUp                      time.Time
}

// startBFDReflector starts a reflector in each of nodes' namespaces,
// advertising interval and mult; it stops with the test.
func startBFDReflector(t *testing.T, l *lab.Lab, interval time.Duration, mult uint8, nodes ...string) *bfdReflector {
	t.Helper()
	us := uint32(interval / time.Microsecond)
	r := &bfdReflector{
		timing:   bfd.Packet{DetectMult: mult, DesiredMinTxUsec: us, RequiredMinRxUsec: us},
		rng:      rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		sessions: map[[2]netip.Addr]*reflected{},
		discs:    map[uint32]bool{},
	}
	t.Cleanup(r.stop)
	for _, node := range nodes {
		for _, v6 := range []bool{false, true} {
			var conn *net.UDPConn
			err := l.Do(node, func() (err error) {
				conn, err = reflectorListen(v6)
				return err
			})
			if err != nil {
				t.Fatalf("BFD reflector in %s: %v", node, err)
			}
			r.conns = append(r.conns, conn)
			r.wg.Add(1)
			go r.serve(conn, v6)
		}
	}
	return r
}

// reflectorListen opens the wildcard socket of one family on port 3784
// with TTL 255 on send and the destination address and TTL of each
// datagram received.
func reflectorListen(v6 bool) (*net.UDPConn, error) {
	opts := [][3]int{{unix.IPPROTO_IP, unix.IP_TTL, 255}, {unix.IPPROTO_IP, unix.IP_PKTINFO, 1}, {unix.IPPROTO_IP, unix.IP_RECVTTL, 1}}
	network, addr := "udp4", fmt.Sprintf("0.0.0.0:%d", bfd.PortSingleHop)
	if v6 {
		opts = [][3]int{{unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS, 255}, {unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1}, {unix.IPPROTO_IPV6, unix.IPV6_RECVHOPLIMIT, 1}}
		network, addr = "udp6", fmt.Sprintf("[::]:%d", bfd.PortSingleHop)
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			for _, o := range opts {
				if serr == nil {
					serr = unix.SetsockoptInt(int(fd), o[0], o[1], o[2])
				}
			}
			if serr == nil { // the SLLBR's 2,000 sessions come Up in a burst
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
			}
		})
		return errors.Join(err, serr)
	}}
	pc, err := lc.ListenPacket(context.Background(), network, addr)
	if err != nil {
		return nil, err
	}
	return pc.(*net.UDPConn), nil
}

// serve answers the packets of one socket until it is closed.
func (r *bfdReflector) serve(conn *net.UDPConn, v6 bool) {
	defer r.wg.Done()
	buf, oob, out := make([]byte, 512), make([]byte, 256), make([]byte, bfd.PacketLen)
	for {
		n, oobn, _, from, err := conn.ReadMsgUDPAddrPort(buf, oob)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		dst, ttl, perr := reflectorAncillary(oob[:oobn])
		if err != nil || perr != nil {
			r.mu.Lock()
			r.counts.ReadErrors++
			r.mu.Unlock()
			continue
		}
		answer, ok := r.receive(buf[:n], from.Addr().Unmap(), dst, ttl, out)
		if !ok {
			continue
		}
		var info []byte
		if v6 {
			info = unix.PktInfo6(&unix.Inet6Pktinfo{Addr: dst.As16()})
		} else {
			info = unix.PktInfo4(&unix.Inet4Pktinfo{Spec_dst: dst.As4()})
		}
		_, _, err = conn.WriteMsgUDPAddrPort(answer, info, netip.AddrPortFrom(from.Addr(), bfd.PortSingleHop))
		r.mu.Lock()
		if err != nil {
			r.counts.SendErrors++
		} else {
			r.counts.Sent++
		}
		r.mu.Unlock()
	}
}

// reflectorAncillary returns a datagram's destination address and TTL (hop
// limit) from its control messages.
func reflectorAncillary(oob []byte) (dst netip.Addr, ttl int, err error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return dst, 0, err
	}
	ttl = -1
	for _, m := range msgs {
		switch {
		case m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_PKTINFO && len(m.Data) >= unix.SizeofInet4Pktinfo:
			dst = netip.AddrFrom4([4]byte(m.Data[8:12])) // ipi_addr: the header's destination
		case m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_PKTINFO && len(m.Data) >= unix.SizeofInet6Pktinfo:
			dst = netip.AddrFrom16([16]byte(m.Data[:16]))
		case (m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TTL || m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_HOPLIMIT) && len(m.Data) >= 4:
			ttl = int(int32(binary.NativeEndian.Uint32(m.Data)))
		}
	}
	if !dst.IsValid() {
		return dst, ttl, errors.New("no destination address")
	}
	return dst, ttl, nil
}

// receive applies one datagram from src to dst to its session and writes
// the answer into out; ok is false when the datagram is dropped.
func (r *bfdReflector) receive(b []byte, src, dst netip.Addr, ttl int, out []byte) (answer []byte, ok bool) {
	var p bfd.Packet
	err := p.Unmarshal(b)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case ttl != 255:
		r.counts.BadTTL++
		return nil, false
	case err != nil:
		r.counts.Invalid++
		return nil, false
	}
	key := [2]netip.Addr{src, dst}
	s := r.sessions[key]
	if s == nil {
		s = &reflected{disc: r.newDiscriminator(), state: bfd.StateDown}
		r.sessions[key] = s
	}
	if p.YourDiscriminator != 0 && p.YourDiscriminator != s.disc {
		r.counts.Mismatched++
		return nil, false
	}
	r.counts.Received++
	old := s.state
	switch {
	case p.State == bfd.StateAdminDown || p.State == bfd.StateDown && s.state == bfd.StateUp:
		s.state = bfd.StateDown
	case s.state == bfd.StateDown && p.State == bfd.StateDown:
		s.state = bfd.StateInit
	case s.state != bfd.StateUp && (p.State == bfd.StateInit || p.State == bfd.StateUp):
		s.state = bfd.StateUp
	}
	if old != bfd.StateUp && s.state == bfd.StateUp {
		r.counts.Up++
		r.counts.LastUp = time.Now()
		if s.up.IsZero() {
			s.up = r.counts.LastUp
		}
	}
	if old == bfd.StateUp && s.state != bfd.StateUp {
		r.counts.Up--
		r.counts.Downs++
	}
	a := r.timing
	a.State, a.MyDiscriminator, a.YourDiscriminator, a.Final = s.state, s.disc, p.MyDiscriminator, p.Poll
	if s.state == bfd.StateDown && old == bfd.StateUp {
		a.Diag = bfd.DiagNeighborSignaledDown
	}
	n, _ := a.MarshalTo(out)
	return out[:n], true
}

// newDiscriminator returns a non-zero discriminator no session uses. Called
// with r.mu held.
func (r *bfdReflector) newDiscriminator() uint32 {
	for {
		if d := r.rng.Uint32(); d != 0 && !r.discs[d] {
			r.discs[d] = true
			return d
		}
	}
}

// snapshot returns the counters, the sessions seen and when the first of
// them came Up (zero: none yet).
func (r *bfdReflector) snapshot() (c reflectorCounts, sessions int, firstUp time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sessions {
		if !s.up.IsZero() && (firstUp.IsZero() || s.up.Before(firstUp)) {
			firstUp = s.up
		}
	}
	return r.counts, len(r.sessions), firstUp
}

// stop closes the sockets and waits for the serving goroutines.
func (r *bfdReflector) stop() {
	for _, c := range r.conns {
		_ = c.Close()
	}
	r.wg.Wait()
	r.conns = nil
}
