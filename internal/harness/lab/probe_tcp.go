package lab

import (
	"context"
	"fmt"
	"net/netip"
	"time"
)

// tcpProber opens TCPPerSecond new connections per second to the VIP, one
// at a time, each from a port the kernel picks; each must bring the
// responder's reply naming the client's own address and port, then is
// reset (no TIME_WAIT piles up over a long run). It dials in run, so run
// must stay in the client's namespace.
type tcpProber struct {
	kind string
	o    ProbeOptions
	vip  netip.Addr
}

func (p *tcpProber) open() error  { return nil }
func (p *tcpProber) close() error { return nil }

func (p *tcpProber) run(ctx context.Context, record func(ProbeResult)) {
	src := netip.AddrPortFrom(ClientAddrs().For(p.vip), 0)
	dst := netip.AddrPortFrom(p.vip, p.o.TCPPort)
	fo := FlowOptions{Timeout: p.o.Timeout, Payload: []byte("probe\n")}
	probeEvery(ctx, time.Second/time.Duration(p.o.TCPPerSecond), record, func(r *ProbeResult) error {
		r.Kind = p.kind
		_, target, c, err := tcpFlow(ctx, fo, src, dst)
		if c != nil {
			_ = c.Close() // with RST (tcpFlow set linger 0); nothing to report
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p.kind, err)
		}
		r.Target = target
		return nil
	})
}
