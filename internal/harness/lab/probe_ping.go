package lab

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/sllbrd/sllbrd/internal/liveness"
)

// pingProber sends an ICMP echo request with a fixed identifier and a new
// sequence number every Interval from a raw socket bound to the client's
// address, and waits for the VIP's reply carrying the same identifier,
// sequence number and data. A raw socket sees every ICMP message to the
// client, so others' pings and errors are skipped.
type pingProber struct {
	kind string
	o    ProbeOptions
	vip  netip.Addr
	conn *net.IPConn
	flow string
}

func (p *pingProber) open() error {
	client := ClientAddrs().For(p.vip)
	c, err := listenICMP(client)
	if err != nil {
		return fmt.Errorf("%s: %w", p.kind, err)
	}
	p.conn = c
	p.flow = fmt.Sprintf("icmp %s->%s id %d", client, p.vip, p.o.PingID)
	return nil
}

// listenICMP opens a raw ICMP (or ICMPv6) socket bound to local: it gets a
// copy of every ICMP message to local, whoever else handles it.
func listenICMP(local netip.Addr) (*net.IPConn, error) {
	network := "ip4:icmp"
	if local.Is6() {
		network = "ip6:ipv6-icmp"
	}
	c, err := net.ListenIP(network, &net.IPAddr{IP: local.AsSlice()})
	if err != nil {
		return nil, fmt.Errorf("icmp socket on %s: %w", local, err)
	}
	return c, nil
}

func (p *pingProber) close() error {
	if p.conn == nil {
		return nil
	}
	return p.conn.Close()
}

func (p *pingProber) run(ctx context.Context, record func(ProbeResult)) {
	buf := make([]byte, 1500)
	to := &net.IPAddr{IP: p.vip.AsSlice()}
	var seq uint16
	probeEvery(ctx, p.o.Interval, record, func(r *ProbeResult) error {
		seq++
		r.Kind, r.Flow = p.kind, p.flow
		data := []byte(fmt.Sprintf("sllbrd probe %d", seq))
		req := liveness.AppendEchoRequest(nil, p.vip.Is6(), p.o.PingID, seq, data)
		err := p.conn.SetDeadline(r.At.Add(p.o.Timeout))
		if err == nil {
			_, err = p.conn.WriteToIP(req, to)
		}
		if err == nil {
			err = p.awaitReply(buf, seq, data)
		}
		if err != nil {
			return fmt.Errorf("%s %s seq %d: %w", p.kind, p.flow, seq, err)
		}
		return nil
	})
}

// awaitReply reads until the echo reply to (PingID, seq) from the VIP with
// data comes, or the deadline. ReadMsgIP, unlike ReadFromIP, keeps the IPv4
// header, which liveness.Echo.DecodeIPv4 checks.
func (p *pingProber) awaitReply(buf []byte, seq uint16, data []byte) error {
	var e liveness.Echo
	for {
		n, _, _, from, err := p.conn.ReadMsgIP(buf, nil)
		if err != nil {
			return err
		}
		a, ok := netip.AddrFromSlice(from.IP)
		if !ok || a.Unmap() != p.vip {
			continue
		}
		if p.vip.Is4() {
			err = e.DecodeIPv4(buf[:n])
		} else {
			err = e.DecodeICMPv6(buf[:n])
		}
		if err != nil || !e.IsReply() || e.Code != 0 || e.ID != p.o.PingID || e.Seq != seq {
			continue // not ours: another ping, an ICMP error, a damaged reply
		}
		if !bytes.Equal(e.Data, data) {
			return fmt.Errorf("echo reply data %q, sent %q", e.Data, data)
		}
		return nil
	}
}
