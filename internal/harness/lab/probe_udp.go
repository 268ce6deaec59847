package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// udpProber sends one datagram per fixed flow every Interval and checks each
// flow's reply: the "udp" kinds (small datagrams) and the "frag" kinds (one
// flow whose datagrams are larger than the path MTU, so the client's kernel
// sends them as IP fragments and the target's reassembles them).
type udpProber struct {
	kind    string
	o       ProbeOptions
	vip     netip.Addr
	srcBase uint16
	flows   int
	payload []byte
	conns   []*net.UDPConn
	ids     []Flow
}

// fragPayload is n bytes of a repeating pattern.
func fragPayload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

func (p *udpProber) open() error {
	dst := netip.AddrPortFrom(p.vip, p.o.UDPPort)
	for i := range p.flows {
		src := netip.AddrPortFrom(ClientAddrs().For(p.vip), p.srcBase+uint16(i))
		c, err := net.DialUDP(kindOf("udp", p.vip), net.UDPAddrFromAddrPort(src), net.UDPAddrFromAddrPort(dst))
		if err != nil {
			return fmt.Errorf("%s from %s to %s: %w", p.kind, src, dst, err)
		}
		p.conns = append(p.conns, c)
		p.ids = append(p.ids, Flow{Proto: "udp", Src: src, Dst: dst})
	}
	return nil
}

func (p *udpProber) close() error {
	var errs []error
	for _, c := range p.conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// run probes each flow in a goroutine of its own (the sockets are made, so
// they need not run in the namespace): one flow's lost reply delays no
// other flow's probe nor its RTT.
func (p *udpProber) run(ctx context.Context, record func(ProbeResult)) {
	var wg sync.WaitGroup
	for i := range p.conns {
		wg.Go(func() { p.runFlow(ctx, i, record) })
	}
	wg.Wait()
}

// runFlow sends flow i's datagram every Interval and waits for its reply.
func (p *udpProber) runFlow(ctx context.Context, i int, record func(ProbeResult)) {
	c, id := p.conns[i], p.ids[i]
	buf := make([]byte, 512)
	probeEvery(ctx, p.o.Interval, record, func(r *ProbeResult) error {
		r.Kind, r.Flow = p.kind, id.String()
		err := c.SetDeadline(r.At.Add(p.o.Timeout))
		if err == nil {
			drain(c, buf)
			r.At = time.Now()
			_, err = c.Write(p.payload)
		}
		var n int
		if err == nil {
			n, err = c.Read(buf)
		}
		if err == nil {
			r.Target, err = checkReply(id, string(buf[:n]))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p.kind, err) // err names the flow
		}
		return nil
	})
}

// drain discards what is queued on c (replies that came after their
// probe's timeout, and an error an ICMP message left on the socket), so the
// next read is the next probe's reply. c's deadline must not have passed.
func drain(c *net.UDPConn, buf []byte) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		for range 64 {
			_, _, err := unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
			if errors.Is(err, unix.EAGAIN) {
				break
			}
		}
		return true
	})
}
