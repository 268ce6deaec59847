package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// ProbeOptions describe steady probe traffic from the client to VIPs, for a
// test that must see, sample by sample, when traffic is lost and where it
// lands (the soak). A kind runs when its port (or Ping) is set; every
// enabled kind probes every VIP.
type ProbeOptions struct {
	VIPs []netip.Addr // 1..16 lab VIPs, both families allowed
	// UDPPort is a responder UDP port: "udp" and "frag" probes go there
	// (0: neither runs).
	UDPPort uint16
	// UDPFlows fixed flows per VIP (default 4, at most 64); flow i of VIP
	// v (v its index in VIPs) comes from source port
	// UDPSrcBase+v*UDPFlows+i (UDPSrcBase default 20000, below the
	// ephemeral range). Each flow sends one datagram every Interval.
	UDPFlows   int
	UDPSrcBase uint16
	// Interval between two probes of one udp flow, frag flow or ping
	// (default 200 ms, at least 10 ms).
	Interval time.Duration
	// TCPPort is a responder TCP port: "tcp" probes open TCPPerSecond new
	// connections per second per VIP there (default 5, at most 100), each
	// from a port the kernel picks, read the reply and reset (0: no tcp).
	TCPPort      uint16
	TCPPerSecond int
	// FragSrcPort enables "frag" probes: one fixed UDP flow per VIP, from
	// port FragSrcPort+v, whose datagrams of FragBytes (default 3000, at
	// most 65000) leave the client as IP fragments (0: no frag).
	FragBytes   int
	FragSrcPort uint16
	// Ping sends ICMP echo requests with identifier PingID (default
	// 0x5011) every Interval to each VIP from a raw socket.
	Ping   bool
	PingID uint16
	// SCTPPort enables "sctp" probes (0: none): one fixed association per
	// VIP, from port SCTPSrcPort+v (default 20000; SCTP ports are apart
	// from UDP's) to SCTPPort, whose INIT goes out from a raw socket every
	// Interval with a new initiate tag. The lab's targets have no SCTP in
	// their kernel: the answer is the target kernel's ICMP protocol
	// unreachable (IPv4) or ICMPv6 parameter problem "unrecognized Next
	// Header", from the VIP, quoting the INIT unchanged.
	SCTPPort    uint16
	SCTPSrcPort uint16
	// Timeout bounds one probe (default 1 s, at most 10 s): a reply later
	// than that is a failed sample, and a probe holds its kind's loop no
	// longer than that.
	Timeout time.Duration
}

// ProbeResult is one probe's outcome.
type ProbeResult struct {
	At time.Time // when the probe was sent (tcp: when the dial began)
	// Kind is "udp4", "udp6", "tcp4", "tcp6", "frag4", "frag6", "ping4",
	// "ping6", "sctp4" or "sctp6".
	Kind string
	// Flow names a fixed flow (udp, frag, sctp: Flow.String(), e.g. "sctp
	// 10.100.0.2:20000->20.0.0.1:9"; ping: "icmp client->VIP id N"); ""
	// for tcp, a new connection each probe.
	Flow string
	// Target answered ("" when Err is set, and for pings and sctp: an
	// echo reply or an ICMP error does not say who sent it).
	Target string
	RTT    time.Duration // from sending to the reply, or to the failure
	Err    error         // nil: answered, and the reply checked
}

// Probes run until Stop (or the context given to StartProbes ends).
type Probes struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex // serializes record
	record   func(ProbeResult)
	stopOnce sync.Once
	errMu    sync.Mutex
	errs     []error
}

const (
	maxProbeVIPs     = 16
	maxUDPFlows      = 64
	maxTCPPerSecond  = 100
	maxFragBytes     = 65000
	minProbeInterval = 10 * time.Millisecond
	maxProbeTimeout  = 10 * time.Second
	defaultPingID    = 0x5011
)

func (o ProbeOptions) withDefaults() (ProbeOptions, error) {
	if len(o.VIPs) == 0 || len(o.VIPs) > maxProbeVIPs {
		return o, fmt.Errorf("probes: %d VIPs, want 1..%d", len(o.VIPs), maxProbeVIPs)
	}
	seen := map[netip.Addr]bool{}
	for _, v := range o.VIPs {
		if !v.IsValid() || v.Is4In6() || v.IsUnspecified() || v.IsMulticast() || seen[v] {
			return o, fmt.Errorf("probes: VIP %v: invalid, mapped, wildcard, multicast or repeated", v)
		}
		seen[v] = true
	}
	if o.UDPPort == 0 && o.TCPPort == 0 && o.SCTPPort == 0 && !o.Ping {
		return o, errors.New("probes: nothing to probe (no UDPPort, TCPPort, SCTPPort or Ping)")
	}
	if o.FragSrcPort != 0 && o.UDPPort == 0 {
		return o, errors.New("probes: FragSrcPort without UDPPort")
	}
	if o.SCTPSrcPort != 0 && o.SCTPPort == 0 {
		return o, errors.New("probes: SCTPSrcPort without SCTPPort")
	}
	o.UDPFlows = orDefault(o.UDPFlows, 4)
	o.UDPSrcBase = orDefault(o.UDPSrcBase, 20000)
	o.Interval = orDefault(o.Interval, 200*time.Millisecond)
	o.TCPPerSecond = orDefault(o.TCPPerSecond, 5)
	o.FragBytes = orDefault(o.FragBytes, 3000)
	o.PingID = orDefault(o.PingID, defaultPingID)
	if o.SCTPPort != 0 {
		o.SCTPSrcPort = orDefault(o.SCTPSrcPort, 20000)
	}
	o.Timeout = orDefault(o.Timeout, time.Second)
	switch {
	case o.UDPFlows < 0 || o.UDPFlows > maxUDPFlows:
		return o, fmt.Errorf("probes: %d UDP flows per VIP, want 1..%d", o.UDPFlows, maxUDPFlows)
	case o.Interval < minProbeInterval:
		return o, fmt.Errorf("probes: interval %v, want at least %v", o.Interval, minProbeInterval)
	case o.TCPPerSecond < 0 || o.TCPPerSecond > maxTCPPerSecond:
		return o, fmt.Errorf("probes: %d TCP connections per second, want 1..%d", o.TCPPerSecond, maxTCPPerSecond)
	case o.FragBytes < 0 || o.FragBytes > maxFragBytes:
		return o, fmt.Errorf("probes: fragmented datagrams of %d bytes, want 1..%d", o.FragBytes, maxFragBytes)
	case o.Timeout < 0 || o.Timeout > maxProbeTimeout:
		return o, fmt.Errorf("probes: timeout %v, want up to %v", o.Timeout, maxProbeTimeout)
	}
	if o.SCTPPort != 0 && int(o.SCTPSrcPort)+len(o.VIPs) > 65536 {
		return o, fmt.Errorf("probes: %d sctp associations from port %d do not fit", len(o.VIPs), o.SCTPSrcPort)
	}
	return o, o.checkSourcePorts()
}

// checkSourcePorts: the fixed UDP flows' source ports must fit and be
// distinct.
func (o ProbeOptions) checkSourcePorts() error {
	if o.UDPPort == 0 {
		return nil
	}
	udpEnd := int(o.UDPSrcBase) + len(o.VIPs)*o.UDPFlows // exclusive
	if udpEnd > 65536 {
		return fmt.Errorf("probes: %d UDP flows per VIP from port %d do not fit", o.UDPFlows, o.UDPSrcBase)
	}
	if o.FragSrcPort == 0 {
		return nil
	}
	fragEnd := int(o.FragSrcPort) + len(o.VIPs)
	if fragEnd > 65536 {
		return fmt.Errorf("probes: %d frag flows from port %d do not fit", len(o.VIPs), o.FragSrcPort)
	}
	if int(o.FragSrcPort) < udpEnd && fragEnd > int(o.UDPSrcBase) {
		return fmt.Errorf("probes: frag source ports %d-%d overlap the UDP flows' %d-%d",
			o.FragSrcPort, fragEnd-1, o.UDPSrcBase, udpEnd-1)
	}
	return nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// prober is one kind's probes of one VIP (udp: a goroutine per flow). open runs in the client's
// namespace and makes its sockets; run (also there: tcp dials in it) probes
// until ctx ends; close releases what open made.
type prober interface {
	open() error
	run(ctx context.Context, record func(ProbeResult))
	close() error
}

// StartProbes opens every probe's sockets in the client's namespace and
// starts one loop per kind and VIP; it fails (closing what it opened) if a
// socket cannot be made. record gets every result, one call at a time (it
// must return quickly: the probes wait for it). Stop ends the probes.
func (l *Lab) StartProbes(ctx context.Context, o ProbeOptions, record func(ProbeResult)) (*Probes, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if record == nil {
		return nil, errors.New("probes: no record function")
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Probes{cancel: cancel, record: record}
	probers := o.probers()
	ready := make(chan error, len(probers))
	for _, pr := range probers {
		p.wg.Go(func() {
			err := l.Do(ClientNode, func() error {
				if err := pr.open(); err != nil {
					_ = pr.close()
					ready <- err
					return nil
				}
				ready <- nil
				pr.run(ctx, p.add)
				p.fail(pr.close())
				return nil
			})
			if err != nil { // the namespace could not be entered: open never ran
				ready <- err
			}
		})
	}
	var errs []error
	for range probers {
		errs = append(errs, <-ready)
	}
	if err := errors.Join(errs...); err != nil {
		cancel()
		p.wg.Wait()
		return nil, fmt.Errorf("probes: %w", err)
	}
	return p, nil
}

// probers lists one prober per enabled kind and VIP.
func (o ProbeOptions) probers() []prober {
	var out []prober
	for v, vip := range o.VIPs {
		if o.UDPPort != 0 {
			out = append(out, &udpProber{kind: kindOf("udp", vip), o: o, vip: vip,
				srcBase: o.UDPSrcBase + uint16(v*o.UDPFlows), flows: o.UDPFlows, payload: []byte("probe\n")})
		}
		if o.FragSrcPort != 0 {
			out = append(out, &udpProber{kind: kindOf("frag", vip), o: o, vip: vip,
				srcBase: o.FragSrcPort + uint16(v), flows: 1, payload: fragPayload(o.FragBytes)})
		}
		if o.TCPPort != 0 {
			out = append(out, &tcpProber{kind: kindOf("tcp", vip), o: o, vip: vip})
		}
		if o.Ping {
			out = append(out, &pingProber{kind: kindOf("ping", vip), o: o, vip: vip})
		}
		if o.SCTPPort != 0 {
			out = append(out, &sctpProber{kind: kindOf("sctp", vip), o: o, vip: vip, srcPort: o.SCTPSrcPort + uint16(v)})
		}
	}
	return out
}

// probeEvery calls probe every interval until ctx ends and records each
// result: probeEvery sets At (probe may move it to the moment it sends) and
// RTT, probe the rest, returning its failure, which becomes Err (and clears
// Target). A failure once ctx has ended is Stop cutting the probe short,
// not a loss: it is dropped.
func probeEvery(ctx context.Context, interval time.Duration, record func(ProbeResult), probe func(r *ProbeResult) error) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r := ProbeResult{At: time.Now()}
		err := probe(&r)
		r.RTT = time.Since(r.At)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.Target, r.Err = "", err
		}
		record(r)
	}
}

// kindOf is base with the family of a: "udp4", "ping6".
func kindOf(base string, a netip.Addr) string {
	if a.Is4() {
		return base + "4"
	}
	return base + "6"
}

func (p *Probes) add(r ProbeResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record(r)
}

func (p *Probes) fail(err error) {
	if err == nil {
		return
	}
	p.errMu.Lock()
	p.errs = append(p.errs, err)
	p.errMu.Unlock()
}

// Stop ends the probes, waits for them (at most about Timeout: a probe in
// flight finishes first, and its result is dropped if it failed) and
// closes their sockets; it returns the errors of closing. Idempotent.
func (p *Probes) Stop() error {
	p.stopOnce.Do(p.cancel)
	p.wg.Wait()
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return errors.Join(p.errs...)
}
