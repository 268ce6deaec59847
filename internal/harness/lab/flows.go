package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/lab/responder"
)

// Flow is one client flow to a VIP.
type Flow struct {
	Proto    string // "udp" or "tcp"
	Src, Dst netip.AddrPort
}

func (f Flow) String() string { return f.Proto + " " + f.Src.String() + "->" + f.Dst.String() }

// FlowOptions bound a run of client flows.
type FlowOptions struct {
	VIP   netip.Addr
	Port  uint16 // destination port (default 5000)
	Proto string // "udp" (default) or "tcp"
	Count int    // number of flows (default 32, at most 10000)
	// SrcPortBase fixes the source ports to SrcPortBase..SrcPortBase+Count-1,
	// so a second run repeats the same flows. 0 lets the kernel choose
	// (distinct within the run: every socket stays open until the run ends).
	SrcPortBase uint16
	Timeout     time.Duration // per attempt (default 1 s)
	Attempts    int           // UDP tries per flow (default 3)
	Parallel    int           // flows in flight (default 16)
	// Payload is each request's content (default "hello\n"); UDP payloads
	// larger than the path MTU leave the client as IP fragments.
	Payload []byte
}

const maxFlows = 10000

func (o FlowOptions) withDefaults() (FlowOptions, error) {
	if !o.VIP.IsValid() {
		return o, errors.New("flows: no VIP")
	}
	if o.Port == 0 {
		o.Port = 5000
	}
	if o.Proto == "" {
		o.Proto = "udp"
	}
	if o.Proto != "udp" && o.Proto != "tcp" {
		return o, fmt.Errorf("flows: protocol %q, want udp or tcp", o.Proto)
	}
	if o.Count <= 0 {
		o.Count = 32
	}
	if o.Count > maxFlows || (o.SrcPortBase != 0 && int(o.SrcPortBase)+o.Count > 65536) {
		return o, fmt.Errorf("flows: %d flows from port %d do not fit", o.Count, o.SrcPortBase)
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	if o.Parallel <= 0 {
		o.Parallel = 16
	}
	if len(o.Payload) == 0 {
		o.Payload = []byte("hello\n")
	}
	o.Parallel = min(o.Parallel, o.Count)
	return o, nil
}

// Flows runs Count flows from the client to VIP:Port, each one request and
// one reply, and returns which target answered each flow. A reply must
// name the client's own address and port (no NAT on the way). Flows that got
// no valid reply are missing from the map and counted in the error, which
// wraps the first failure; the map is valid even then.
func (l *Lab) Flows(ctx context.Context, o FlowOptions) (map[Flow]string, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	var (
		mu       sync.Mutex
		served   = map[Flow]string{}
		failures []error
		jobs     = make(chan int)
		wg       sync.WaitGroup
		// open holds every flow's socket until all workers are done: a
		// socket closed while another worker still dials frees its
		// ephemeral port for that dial, and two flows with one 5-tuple
		// would count as one.
		open []io.Closer
	)
	keepOpen := o.SrcPortBase == 0
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for range o.Parallel {
		wg.Go(func() {
			err := l.Do(ClientNode, func() error {
				for i := range jobs {
					f, target, c, err := oneFlow(ctx, o, i)
					mu.Lock()
					if _, dup := served[f]; err == nil && dup {
						err = fmt.Errorf("flow %s ran twice (its source port was reused)", f)
					}
					if err != nil {
						failures = append(failures, err)
					} else {
						served[f] = target
					}
					if c != nil && keepOpen {
						open = append(open, c)
					} else if c != nil {
						c.Close()
					}
					mu.Unlock()
				}
				return nil
			})
			if err != nil { // the namespace could not be entered: drain
				mu.Lock()
				failures = append(failures, err)
				mu.Unlock()
				for range jobs {
				}
			}
		})
	}
	for i := range o.Count {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if len(failures) > 0 {
		return served, fmt.Errorf("flows: %d of %d %s flows to %s failed: %w",
			len(failures), o.Count, o.Proto, netip.AddrPortFrom(o.VIP, o.Port), failures[0])
	}
	return served, nil
}

// oneFlow runs flow i; it must run inside the client namespace. It returns
// the connection (to close) even on failure when one was made.
func oneFlow(ctx context.Context, o FlowOptions, i int) (Flow, string, io.Closer, error) {
	dst := netip.AddrPortFrom(o.VIP, o.Port)
	var srcPort uint16
	if o.SrcPortBase != 0 {
		srcPort = o.SrcPortBase + uint16(i)
	}
	src := netip.AddrPortFrom(ClientAddrs().For(o.VIP), srcPort)
	if o.Proto == "tcp" {
		return tcpFlow(ctx, o, src, dst)
	}
	return udpFlow(ctx, o, src, dst)
}

func udpFlow(ctx context.Context, o FlowOptions, src, dst netip.AddrPort) (Flow, string, io.Closer, error) {
	f := Flow{Proto: "udp", Dst: dst}
	c, err := net.DialUDP("udp", net.UDPAddrFromAddrPort(src), net.UDPAddrFromAddrPort(dst))
	if err != nil {
		return f, "", nil, fmt.Errorf("udp from %s: %w", src, err)
	}
	f.Src = unmapped(c.LocalAddr().(*net.UDPAddr).AddrPort())
	buf := make([]byte, 512)
	var lastErr error
	for range o.Attempts {
		if ctx.Err() != nil {
			return f, "", c, ctx.Err()
		}
		_ = c.SetDeadline(time.Now().Add(o.Timeout))
		if _, err := c.Write(o.Payload); err != nil {
			lastErr = err
			continue
		}
		n, err := c.Read(buf)
		if err != nil {
			lastErr = err
			continue
		}
		target, err := checkReply(f, string(buf[:n]))
		return f, target, c, err
	}
	return f, "", c, fmt.Errorf("%s: no reply after %d attempts: %w", f, o.Attempts, lastErr)
}

func tcpFlow(ctx context.Context, o FlowOptions, src, dst netip.AddrPort) (Flow, string, io.Closer, error) {
	f := Flow{Proto: "tcp", Dst: dst}
	d := net.Dialer{Timeout: o.Timeout, LocalAddr: net.TCPAddrFromAddrPort(src)}
	nc, err := d.DialContext(ctx, "tcp", dst.String())
	if err != nil {
		return f, "", nil, fmt.Errorf("tcp from %s to %s: %w", src, dst, err)
	}
	c := nc.(*net.TCPConn)
	_ = c.SetLinger(0) // close with RST: no TIME_WAIT, fixed source ports can repeat
	f.Src = unmapped(c.LocalAddr().(*net.TCPAddr).AddrPort())
	_ = c.SetDeadline(time.Now().Add(o.Timeout))
	if _, err := c.Write(o.Payload); err != nil {
		return f, "", c, fmt.Errorf("%s: %w", f, err)
	}
	reply, err := io.ReadAll(io.LimitReader(c, 512)) // the server half-closes after its reply
	if err != nil {
		return f, "", c, fmt.Errorf("%s: %w", f, err)
	}
	target, err := checkReply(f, string(reply))
	return f, target, c, err
}

// checkReply parses a responder reply and checks it is about flow f.
func checkReply(f Flow, s string) (string, error) {
	r, err := responder.ParseReply(s)
	if err != nil {
		return "", fmt.Errorf("%s: %w", f, err)
	}
	if r.Client != f.Src || r.Proto != f.Proto {
		return "", fmt.Errorf("%s: reply is for %s %s (address translated?)", f, r.Proto, r.Client)
	}
	return r.Target, nil
}

func unmapped(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// Distribution counts flows per target.
func Distribution(served map[Flow]string) map[string]int {
	out := map[string]int{}
	for _, t := range served {
		out[t]++
	}
	return out
}
