package responder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Config says what a responder serves.
type Config struct {
	Name     string       // target name put in every reply
	Addrs    []netip.Addr // addresses (VIPs) to bind; they need not be local yet
	UDPPorts []uint16
	TCPPorts []uint16
	// EchoPorts are TCP ports of long-lived connections: the reply line,
	// then every byte the client sends echoed back, until the client
	// closes or is silent for EchoIdle.
	EchoPorts []uint16
	// EchoIdle bounds the silence on an echo connection (default 30 s).
	EchoIdle time.Duration
	// CloseWait bounds how long a TCP connection waits for the client to
	// close after the reply (default 2 s).
	CloseWait time.Duration
}

// Server holds the bound sockets of one responder.
type Server struct {
	cfg       Config
	udp       []*net.UDPConn
	tcp       []*net.TCPListener
	echo      []*net.TCPListener
	closeOnce sync.Once
}

// Listen binds every (address, port) pair of cfg, also to addresses that
// are not (yet) on an interface (freebind.go). On error nothing stays bound.
func Listen(cfg Config) (*Server, error) {
	if cfg.Name == "" {
		return nil, errors.New("responder: empty name")
	}
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("responder: no address")
	}
	for _, a := range cfg.Addrs {
		if err := checkAddr(a); err != nil {
			return nil, fmt.Errorf("responder: %w", err)
		}
	}
	if cfg.CloseWait <= 0 {
		cfg.CloseWait = 2 * time.Second
	}
	if cfg.EchoIdle <= 0 {
		cfg.EchoIdle = 30 * time.Second
	}
	s := &Server{cfg: cfg}
	for _, a := range cfg.Addrs {
		for _, p := range cfg.UDPPorts {
			c, err := listenUDP(a, p)
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("responder: udp %s: %w", netip.AddrPortFrom(a, p), err)
			}
			s.udp = append(s.udp, c)
		}
		for _, p := range cfg.TCPPorts {
			l, err := listenTCP(a, p)
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("responder: tcp %s: %w", netip.AddrPortFrom(a, p), err)
			}
			s.tcp = append(s.tcp, l)
		}
		for _, p := range cfg.EchoPorts {
			l, err := listenTCP(a, p)
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("responder: tcp echo %s: %w", netip.AddrPortFrom(a, p), err)
			}
			s.echo = append(s.echo, l)
		}
	}
	return s, nil
}

// Serve answers until ctx ends or Close is called; it then closes every
// socket and returns nil, or the first unexpected socket error.
func (s *Server) Serve(ctx context.Context) error {
	var wg sync.WaitGroup
	errc := make(chan error, len(s.udp)+len(s.tcp)+len(s.echo))
	for _, c := range s.udp {
		wg.Go(func() { errc <- s.serveUDP(c) })
	}
	for _, l := range s.tcp {
		wg.Go(func() { errc <- s.serveTCP(l, s.answerTCP) })
	}
	for _, l := range s.echo {
		wg.Go(func() { errc <- s.serveTCP(l, s.echoTCP) })
	}
	stop := context.AfterFunc(ctx, s.Close)
	defer stop()
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			return err
		}
	}
	return nil
}

// Close closes every socket; Serve then returns.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		for _, c := range s.udp {
			c.Close()
		}
		for _, l := range append(s.tcp, s.echo...) {
			l.Close()
		}
	})
}

func (s *Server) serveUDP(c *net.UDPConn) error {
	buf := make([]byte, 65535) // whole datagrams: fragmented ones arrive reassembled
	for {
		_, from, err := c.ReadFromUDPAddrPort(buf)
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("responder: udp read on %s: %w", c.LocalAddr(), err)
		}
		r := Reply{Target: s.cfg.Name, Client: unmap(from), Proto: "udp"}
		// A failed send (e.g. no route back) is the client's problem to see.
		_, _ = c.WriteToUDPAddrPort([]byte(r.String()), from)
	}
}

func (s *Server) serveTCP(l *net.TCPListener, handle func(*net.TCPConn)) error {
	for {
		c, err := l.AcceptTCP()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("responder: tcp accept on %s: %w", l.Addr(), err)
		}
		go handle(c)
	}
}

func (s *Server) answerTCP(c *net.TCPConn) {
	defer c.Close()
	from := unmap(c.RemoteAddr().(*net.TCPAddr).AddrPort())
	r := Reply{Target: s.cfg.Name, Client: from, Proto: "tcp"}
	if _, err := c.Write([]byte(r.String())); err != nil {
		return
	}
	_ = c.CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(s.cfg.CloseWait))
	_, _ = io.Copy(io.Discard, c) // until the client closes (or resets)
}

// echoTCP sends the reply line, then echoes the connection until the
// client closes it or stays silent for EchoIdle.
func (s *Server) echoTCP(c *net.TCPConn) {
	defer c.Close()
	r := Reply{Target: s.cfg.Name, Client: unmap(c.RemoteAddr().(*net.TCPAddr).AddrPort()), Proto: "tcp"}
	if _, err := c.Write([]byte(r.String())); err != nil {
		return
	}
	buf := make([]byte, 4096)
	for {
		_ = c.SetReadDeadline(time.Now().Add(s.cfg.EchoIdle))
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func unmap(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
