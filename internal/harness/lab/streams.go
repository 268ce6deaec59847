package lab

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
)

// StreamOptions describe long-lived TCP connections from the client to a
// VIP's echo port (Options.EchoPorts), each exchanging a message every
// Interval for as long as it is open.
type StreamOptions struct {
	VIP   netip.Addr
	Port  uint16 // an echo port
	Count int    // connections (default 16, at most 1000)
	// Interval between two exchanges of one connection (default 50 ms).
	Interval time.Duration
	// Timeout bounds one exchange: an echo not back within it breaks the
	// connection (default 10 s, longer than TCP's first retransmissions).
	Timeout time.Duration
	// PayloadBytes adds that many random bytes (hex in the line, new for
	// every message) to each message; the echo must match byte for byte
	// (default 0: the message is just the connection's and the exchange's
	// numbers; at most 65536).
	PayloadBytes int
	// StallAfter records every exchange slower than it as a Stall (default
	// 0: none recorded).
	StallAfter time.Duration
	// SrcPortBase fixes the source ports to SrcPortBase..SrcPortBase+Count-1,
	// so that every run opens the same connections: the same flows, which
	// a given Maglev table gives the same targets. They are closed with a
	// reset (no TIME_WAIT), so that a later run can use the ports again. 0
	// lets the kernel choose.
	SrcPortBase uint16
}

// Stall is one exchange slower than StreamOptions.StallAfter.
type Stall struct {
	At  time.Time     // when the exchange started
	RTT time.Duration // how long it took
}

// StreamStats is what one connection saw.
type StreamStats struct {
	Flow      Flow
	Target    string        // the target that accepted it
	Exchanges int           // messages echoed
	MaxRTT    time.Duration // the slowest exchange
	Err       error         // why it broke (nil: still fine)
	// BrokeAt is when the exchange that broke the connection started (zero
	// while it is fine): the first moment the connection was seen failing,
	// up to Timeout before the failure was detected.
	BrokeAt time.Time
	Stalls  []Stall // exchanges slower than StallAfter, oldest first
}

// Streams are open long-lived connections; Close them.
type Streams struct {
	opts  StreamOptions
	stop  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	stats []StreamStats
	once  sync.Once
}

const maxStreamPayload = 65536

func (o StreamOptions) withDefaults() (StreamOptions, error) {
	if !o.VIP.IsValid() || o.Port == 0 {
		return o, errors.New("streams: no VIP or port")
	}
	if o.Count <= 0 {
		o.Count = 16
	}
	if o.Count > 1000 {
		return o, fmt.Errorf("streams: %d connections, at most 1000", o.Count)
	}
	if o.Interval <= 0 {
		o.Interval = 50 * time.Millisecond
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.PayloadBytes < 0 || o.PayloadBytes > maxStreamPayload {
		return o, fmt.Errorf("streams: payload of %d bytes, want 0..%d", o.PayloadBytes, maxStreamPayload)
	}
	if o.StallAfter < 0 {
		return o, fmt.Errorf("streams: negative StallAfter %v", o.StallAfter)
	}
	if o.SrcPortBase != 0 && int(o.SrcPortBase)+o.Count > 65536 {
		return o, fmt.Errorf("streams: %d connections from port %d do not fit", o.Count, o.SrcPortBase)
	}
	return o, nil
}

// OpenStreams connects Count times from the client to VIP:Port and starts
// the exchanges. It fails (closing what it opened) unless every connection
// was accepted by a target.
func (l *Lab) OpenStreams(ctx context.Context, o StreamOptions) (*Streams, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	var conns []*net.TCPConn
	err = l.Do(ClientNode, func() error {
		for i := range o.Count {
			port := uint16(0)
			if o.SrcPortBase != 0 {
				port = o.SrcPortBase + uint16(i)
			}
			d := net.Dialer{Timeout: o.Timeout, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(ClientAddrs().For(o.VIP), port))}
			c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(o.VIP, o.Port).String())
			if err != nil {
				return fmt.Errorf("streams: dial %v: %w", netip.AddrPortFrom(o.VIP, o.Port), err)
			}
			if o.SrcPortBase != 0 {
				_ = c.(*net.TCPConn).SetLinger(0) // close with a reset: the ports can be used again at once
			}
			conns = append(conns, c.(*net.TCPConn))
		}
		return nil
	})
	s := &Streams{opts: o, stop: make(chan struct{}), stats: make([]StreamStats, len(conns))}
	if err == nil {
		err = s.greet(conns)
	}
	if err != nil {
		for _, c := range conns {
			c.Close()
		}
		return nil, err
	}
	for i, c := range conns {
		s.wg.Go(func() { s.exchange(i, c) })
	}
	return s, nil
}

// greet reads each connection's first line: the target that accepted it.
func (s *Streams) greet(conns []*net.TCPConn) error {
	for i, c := range conns {
		s.stats[i].Flow = Flow{Proto: "tcp", Src: unmapped(c.LocalAddr().(*net.TCPAddr).AddrPort()), Dst: netip.AddrPortFrom(s.opts.VIP, s.opts.Port)}
		_ = c.SetReadDeadline(time.Now().Add(s.opts.Timeout))
		line, err := bufio.NewReader(c).ReadString('\n') // the server writes nothing more before we do
		if err != nil {
			return fmt.Errorf("streams: %s: %w", s.stats[i].Flow, err)
		}
		if s.stats[i].Target, err = checkReply(s.stats[i].Flow, line); err != nil {
			return err
		}
	}
	return nil
}

// exchange sends a numbered line every Interval and reads it back until
// Close, or until the connection breaks.
func (s *Streams) exchange(i int, c *net.TCPConn) {
	defer c.Close()
	rd := bufio.NewReader(c)
	payload := make([]byte, s.opts.PayloadBytes)
	tick := time.NewTicker(s.opts.Interval)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		_, _ = rand.Read(payload) // never fails (crypto/rand contract)
		msg := streamMessage(i, n, payload)
		start := time.Now()
		_ = c.SetDeadline(start.Add(s.opts.Timeout))
		_, err := c.Write([]byte(msg))
		var got string
		if err == nil {
			got, err = rd.ReadString('\n')
		}
		if err == nil && got != msg {
			err = fmt.Errorf("echo %q, sent %q", got, msg)
		}
		s.mu.Lock()
		st := &s.stats[i]
		rtt := time.Since(start)
		switch {
		case err != nil:
			st.Err = fmt.Errorf("%s after %d exchanges: %w", st.Flow, st.Exchanges, err)
			st.BrokeAt = start
		default:
			st.Exchanges++
			st.MaxRTT = max(st.MaxRTT, rtt)
			if s.opts.StallAfter > 0 && rtt > s.opts.StallAfter {
				st.Stalls = append(st.Stalls, Stall{At: start, RTT: rtt})
			}
		}
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// streamMessage is exchange n of connection i: its numbers, then the
// payload in hex when there is one, and a newline.
func streamMessage(i, n int, payload []byte) string {
	if len(payload) == 0 {
		return fmt.Sprintf("%d %d\n", i, n)
	}
	return fmt.Sprintf("%d %d %s\n", i, n, hex.EncodeToString(payload))
}

// Stats returns what every connection saw so far (copies: the caller may
// keep them while the exchanges go on).
func (s *Streams) Stats() []StreamStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]StreamStats(nil), s.stats...)
	for i := range out {
		out[i].Stalls = append([]Stall(nil), out[i].Stalls...)
	}
	return out
}

// Close stops the exchanges, closes the connections and returns the stats.
func (s *Streams) Close() []StreamStats {
	s.once.Do(func() { close(s.stop) })
	s.wg.Wait()
	return s.Stats()
}
