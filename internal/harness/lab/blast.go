package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
)

// BlastOptions bound a packet blast from the client.
type BlastOptions struct {
	VIP netip.Addr // destination; its family picks IPv4 or IPv6
	// Port is the UDP destination port; targets count (and drop) only the
	// lab's BlastPort, so leave it 0 (= BlastPort) to measure.
	Port      uint16
	Flows     int           // distinct source ports per sender (default 256)
	Duration  time.Duration // default 5 s, at most 60 s
	Count     uint64        // stop after this many packets (0: Duration only)
	FrameSize int           // Ethernet frame size with FCS (default 64: 18-byte IPv4 UDP payload)
	Batch     int           // messages per sendmmsg (default 64)
	Senders   int           // parallel sending threads (default 1)
	Settle    time.Duration // wait after sending before reading counters (default 300 ms)
	// Rate caps the offered load in packets per second over all senders
	// (0: as fast as the client can send). Batches are spaced evenly, so
	// the load arrives in bursts of at most Batch packets per sender.
	Rate float64
	// Stop, when closed, ends the sending early (Duration still bounds it);
	// the counters are read as usual.
	Stop <-chan struct{}
	// FragmentEvery > 0 sends every FragmentEvery-th flow's datagrams as
	// IPv4/IPv6 fragments of 16 bytes (two per 64-byte frame's datagram);
	// targets count a datagram once, by its first fragment.
	FragmentEvery int
	// FromGateway sends the same packets as Ethernet frames from the
	// gateway's GatewayLink to lb1's MAC through a packet socket that
	// bypasses the qdisc (blast_link.go): neither the client's stack nor
	// the gateway's forwarding is on the path, only lb1 (and, with
	// Options.PointToPoint, no bridge either).
	FromGateway bool
}

// BlastResult is what a blast measured.
type BlastResult struct {
	Sent      uint64            // packets the client's kernel accepted
	Datagrams uint64            // datagrams among them (Sent without fragments)
	Received  uint64            // packets counted on all targets
	PerTarget map[string]uint64 // received per target
	Elapsed   time.Duration     // sending time
}

// SentPPS is the send rate in packets per second.
func (r BlastResult) SentPPS() float64 { return rate(r.Sent, r.Elapsed) }

// ReceivedPPS is the rate the targets received, in packets per second.
func (r BlastResult) ReceivedPPS() float64 { return rate(r.Received, r.Elapsed) }

// Loss is the fraction of sent datagrams not received (0..1).
func (r BlastResult) Loss() float64 {
	sent := r.Datagrams
	if sent == 0 {
		sent = r.Sent
	}
	if sent == 0 || r.Received >= sent {
		return 0
	}
	return float64(sent-r.Received) / float64(sent)
}

func (r BlastResult) String() string {
	return fmt.Sprintf("sent %d (%.0f pps), received %d (%.0f pps), loss %.2f%%, in %v, per target %v",
		r.Sent, r.SentPPS(), r.Received, r.ReceivedPPS(), 100*r.Loss(), r.Elapsed.Round(time.Millisecond), r.PerTarget)
}

func rate(n uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

const maxBlastDuration = 60 * time.Second

func (o BlastOptions) withDefaults(blastPort uint16) (BlastOptions, error) {
	if !o.VIP.IsValid() {
		return o, errors.New("blast: no VIP")
	}
	if o.Port == 0 {
		o.Port = blastPort
	}
	if o.Flows <= 0 {
		o.Flows = 256
	}
	if o.Flows > 50000 {
		return o, fmt.Errorf("blast: %d flows, want at most 50000", o.Flows)
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	o.Duration = min(o.Duration, maxBlastDuration)
	if o.FrameSize <= 0 {
		o.FrameSize = 64
	}
	if o.Batch <= 0 {
		o.Batch = 64
	}
	if o.Senders <= 0 {
		o.Senders = 1
	}
	if o.Settle <= 0 {
		o.Settle = 300 * time.Millisecond
	}
	if o.Rate < 0 {
		return o, fmt.Errorf("blast: negative rate %v", o.Rate)
	}
	return o, nil
}

// Blast sends small UDP packets from the client to a VIP as fast as it can,
// for at most Duration or Count packets, through raw sockets and sendmmsg,
// and counts what the targets received (nftables counters in each target).
func (l *Lab) Blast(ctx context.Context, o BlastOptions) (BlastResult, error) {
	var res BlastResult
	o, err := o.withDefaults(l.opts.BlastPort)
	if err != nil {
		return res, err
	}
	before, err := l.blastCounters(ctx)
	if err != nil {
		return res, err
	}
	senders, err := l.blastSenders(o)
	if err != nil {
		return res, err
	}
	defer func() {
		for _, s := range senders {
			unix.Close(s.fd)
		}
	}()
	sendCtx, stopSending := context.WithCancel(ctx)
	defer stopSending()
	if o.Stop != nil {
		go func() {
			select {
			case <-o.Stop:
				stopSending()
			case <-sendCtx.Done():
			}
		}()
	}
	res.Sent, res.Datagrams, res.Elapsed, err = runSenders(sendCtx, senders, o)
	if err != nil {
		return res, err
	}
	time.Sleep(o.Settle)
	after, err := l.blastCounters(ctx)
	if err != nil {
		return res, err
	}
	res.PerTarget = map[string]uint64{}
	for t, n := range after {
		res.PerTarget[t] = n - before[t]
		res.Received += n - before[t]
	}
	return res, nil
}

// blastSenders makes one raw socket per sender in the client namespace, each
// with its own range of source ports.
func (l *Lab) blastSenders(o BlastOptions) ([]*mmsgSender, error) {
	src := ClientAddrs().For(o.VIP)
	payload := payloadSize(o.FrameSize, o.VIP.Is4())
	var link frameLink
	if o.FromGateway {
		var err error
		if link, err = l.gatewayToLB1(); err != nil {
			return nil, err
		}
	}
	var out []*mmsgSender
	for s := range o.Senders {
		var pkts [][]byte
		var firsts []bool
		for i := range o.Flows {
			f := testpkt.Flow{Src: src, Dst: o.VIP, Proto: unix.IPPROTO_UDP,
				SrcPort: uint16(10000 + (s*o.Flows+i)%50000), DstPort: o.Port}
			datagram := [][]byte{testpkt.Packet(f, make([]byte, payload), testpkt.Options{})}
			if o.FragmentEvery > 0 && i%o.FragmentEvery == 0 {
				datagram = testpkt.Fragments(f, make([]byte, payload), 16, uint32(s*o.Flows+i))
			}
			for j, p := range datagram {
				if o.FromGateway {
					p = link.frame(p)
				}
				pkts, firsts = append(pkts, p), append(firsts, j == 0)
			}
		}
		var fd int
		var err error
		if o.FromGateway {
			err = l.Do(GatewayNode, func() (err error) { fd, err = packetSocket(link.ifindex); return err })
		} else {
			err = l.Do(ClientNode, func() (err error) { fd, err = rawSocket(o.VIP); return err })
		}
		if err != nil {
			for _, s := range out {
				unix.Close(s.fd)
			}
			return nil, fmt.Errorf("blast: %w", err)
		}
		out = append(out, newMmsgSender(fd, pkts, firsts, o.Batch))
	}
	return out, nil
}

// payloadSize is the UDP payload that makes an Ethernet frame (with FCS) of
// frameSize bytes; IPv6 cannot go below 66 bytes.
func payloadSize(frameSize int, is4 bool) int {
	hdr := 14 + 4 + 8 + 40
	if is4 {
		hdr = 14 + 4 + 8 + 20
	}
	return max(frameSize-hdr, 0)
}

// rawSocket opens a raw socket that sends whole IP packets, connected to dst.
func rawSocket(dst netip.Addr) (int, error) {
	var sa unix.Sockaddr
	domain := unix.AF_INET
	if dst.Is4() {
		sa = &unix.SockaddrInet4{Addr: dst.As4()}
	} else {
		domain, sa = unix.AF_INET6, &unix.SockaddrInet6{Addr: dst.As16()}
	}
	fd, err := unix.Socket(domain, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return -1, fmt.Errorf("raw socket: %w", err)
	}
	if err := unix.Connect(fd, sa); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("raw socket connect %s: %w", dst, err)
	}
	return fd, nil
}

// runSenders runs every sender on its own goroutine until the deadline, the
// packet budget or ctx ends, and returns the packets and datagrams sent and
// the time taken.
func runSenders(ctx context.Context, senders []*mmsgSender, o BlastOptions) (uint64, uint64, time.Duration, error) {
	start := time.Now()
	deadline := start.Add(o.Duration)
	budget := o.Count
	if budget == 0 {
		budget = ^uint64(0)
	}
	perSender := max(budget/uint64(len(senders)), 1)
	pace := pacer{start: start}
	if o.Rate > 0 {
		pace.nsPerPacket = 1e9 * float64(len(senders)) / o.Rate
	}
	var wg sync.WaitGroup
	sent := make([]uint64, len(senders))
	errs := make([]error, len(senders))
	for i, s := range senders {
		wg.Go(func() { sent[i], errs[i] = blastLoop(ctx, s, deadline, perSender, pace) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	var total, datagrams uint64
	for i, n := range sent {
		total += n
		datagrams += senders[i].datagrams
	}
	return total, datagrams, elapsed, errors.Join(errs...)
}

// pacer spaces one sender's batches: packet n is due nsPerPacket*n after
// start (nsPerPacket 0: no pacing).
type pacer struct {
	start       time.Time
	nsPerPacket float64
}

// wait sleeps until the packet after sent is due.
func (p pacer) wait(sent uint64) {
	if p.nsPerPacket == 0 {
		return
	}
	due := p.start.Add(time.Duration(float64(sent) * p.nsPerPacket))
	if d := time.Until(due); d > 0 {
		time.Sleep(d)
	}
}

// blastLoop is one sender's hot loop; it allocates nothing.
func blastLoop(ctx context.Context, s *mmsgSender, deadline time.Time, budget uint64, pace pacer) (uint64, error) {
	var sent uint64
	for i := 0; sent < budget; i++ {
		pace.wait(sent)
		if i%16 == 0 || pace.nsPerPacket != 0 {
			if time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
		}
		n, err := s.sendBatch()
		if err != nil {
			return sent, fmt.Errorf("blast: sendmmsg: %w", err)
		}
		sent += uint64(n)
	}
	return sent, nil
}

// Blast counters: every target counts and drops UDP to the blast port in
// prerouting (priority raw, before conntrack).
const blastTable = "sllbrd_lab"

func (l *Lab) installBlastCounter(ctx context.Context, node string) error {
	rules := fmt.Sprintf("add table inet %[1]s; add counter inet %[1]s blast; "+
		"add chain inet %[1]s pre { type filter hook prerouting priority raw; policy accept; }; "+
		"add rule inet %[1]s pre udp dport %[2]d counter name blast drop", blastTable, l.opts.BlastPort)
	if _, err := l.Exec(ctx, node, "nft", rules); err != nil {
		return fmt.Errorf("%s: blast counter: %w", node, err)
	}
	return nil
}

// blastCounters reads every target's blast counter.
// BlastReceived returns, per target, how many blast packets it has counted
// since the lab started: the sum of two differences tells what several
// concurrent blasts delivered together (each BlastResult counts the others'
// packets that arrived during it too).
func (l *Lab) BlastReceived(ctx context.Context) (map[string]uint64, error) {
	return l.blastCounters(ctx)
}

func (l *Lab) blastCounters(ctx context.Context) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, t := range l.Targets() {
		js, err := l.Exec(ctx, t, "nft", "-j", "list", "counter", "inet", blastTable, "blast")
		if err != nil {
			return nil, fmt.Errorf("blast counter of %s: %w", t, err)
		}
		n, err := parseNftCounter(js)
		if err != nil {
			return nil, fmt.Errorf("blast counter of %s: %w", t, err)
		}
		out[t] = n
	}
	// What an XDP sink dropped never reached the counter: its count adds
	// (every UDP frame, the blast's and any other), while it is installed.
	l.mu.Lock()
	sinks := slices.Clone(l.sinks)
	l.mu.Unlock()
	for _, s := range sinks {
		if s.isClosed() {
			continue
		}
		n, err := s.Count()
		if err != nil {
			return nil, fmt.Errorf("blast counter of %s: %w", s.node, err)
		}
		out[s.node] += n
	}
	return out, nil
}

// NftCounter reads the packets of the named counter of table (family inet)
// in node.
func (l *Lab) NftCounter(ctx context.Context, node, table, name string) (uint64, error) {
	js, err := l.Exec(ctx, node, "nft", "-j", "list", "counter", "inet", table, name)
	if err != nil {
		return 0, fmt.Errorf("%s: counter %s %s: %w", node, table, name, err)
	}
	return parseNftCounter(js)
}

// parseNftCounter returns the packets of the one counter in `nft -j list counter` output.
func parseNftCounter(js string) (uint64, error) {
	var doc struct {
		Nftables []struct {
			Counter *struct {
				Packets uint64 `json:"packets"`
			} `json:"counter"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		return 0, fmt.Errorf("nft json: %w", err)
	}
	for _, o := range doc.Nftables {
		if o.Counter != nil {
			return o.Counter.Packets, nil
		}
	}
	return 0, errors.New("nft json: no counter")
}

// SendRaw sends whole IP packets (headers included) from node, each towards
// the destination address in its header, one after the other.
func (l *Lab) SendRaw(node string, pkts ...[]byte) error {
	return l.Do(node, func() error {
		for i, p := range pkts {
			dst, err := packetDestination(p)
			if err != nil {
				return fmt.Errorf("send raw packet %d: %w", i, err)
			}
			fd, err := rawSocket(dst)
			if err != nil {
				return fmt.Errorf("send raw packet %d: %w", i, err)
			}
			_, err = unix.Write(fd, p)
			unix.Close(fd)
			if err != nil {
				return fmt.Errorf("send raw packet %d to %s: %w", i, dst, err)
			}
		}
		return nil
	})
}

// packetDestination reads the destination address of an IPv4 or IPv6 packet.
func packetDestination(p []byte) (netip.Addr, error) {
	switch {
	case len(p) >= 20 && p[0]>>4 == 4:
		return netip.AddrFrom4([4]byte(p[16:20])), nil
	case len(p) >= 40 && p[0]>>4 == 6:
		return netip.AddrFrom16([16]byte(p[24:40])), nil
	}
	return netip.Addr{}, errors.New("not an IPv4 or IPv6 packet")
}
