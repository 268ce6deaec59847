package responder

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

func TestParsePorts(t *testing.T) {
	tests := []struct {
		in      string
		want    []uint16
		wantErr bool
	}{
		{in: "80", want: []uint16{80}},
		{in: "80,5000-5002", want: []uint16{80, 5000, 5001, 5002}},
		{in: " 5001 , 5000-5001 ", want: []uint16{5001, 5000}},
		{in: "", want: nil},
		{in: "0", wantErr: true},
		{in: "70000", wantErr: true},
		{in: "10-5", wantErr: true},
		{in: "a", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParsePorts(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParsePorts(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("ParsePorts(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestReplyRoundTrip(t *testing.T) {
	for _, r := range []Reply{
		{Target: "t1", Client: netip.MustParseAddrPort("10.100.0.2:40000"), Proto: "udp"},
		{Target: "t3", Client: netip.MustParseAddrPort("[fd00:100::2]:1"), Proto: "tcp"},
	} {
		got, err := ParseReply(r.String())
		if err != nil || got != r {
			t.Errorf("ParseReply(%q) = %+v, %v; want %+v", r.String(), got, err, r)
		}
	}
	for _, bad := range []string{"", "target=t1", "target=t1 client=x proto=udp", "a=1 b=2 c=3", "target= client=1.2.3.4:5 proto=udp"} {
		if _, err := ParseReply(bad); err == nil {
			t.Errorf("ParseReply(%q) succeeded, want error", bad)
		}
	}
}

// TestServeLoopback runs a real responder on 127.0.0.1 and ::1 and checks
// that UDP and TCP clients get a reply naming the target and themselves.
func TestServeLoopback(t *testing.T) {
	addrs := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}
	udpPort, tcpPort := freePort(t, "udp"), freePort(t, "tcp")
	s, err := Listen(Config{Name: "tx", Addrs: addrs, UDPPorts: []uint16{udpPort}, TCPPorts: []uint16{tcpPort}})
	if err != nil {
		require.Missing(t, "cannot bind loopback (no IPv6?): %v", err)
	}
	serve(t, s)
	for _, a := range addrs {
		for _, proto := range []string{"udp", "tcp"} {
			port := udpPort
			if proto == "tcp" {
				port = tcpPort
			}
			c, err := net.DialTimeout(proto, netip.AddrPortFrom(a, port).String(), time.Second)
			if err != nil {
				t.Fatalf("dial %s %s: %v", proto, a, err)
			}
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			if _, err := c.Write([]byte("hi")); err != nil {
				t.Fatalf("write: %v", err)
			}
			line, err := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if err != nil {
				t.Fatalf("%s %s read: %v", proto, a, err)
			}
			r, err := ParseReply(line)
			if err != nil {
				t.Fatal(err)
			}
			local := netip.MustParseAddrPort(c.LocalAddr().String())
			if r.Target != "tx" || r.Proto != proto || r.Client != local {
				t.Errorf("%s %s: reply %+v, want target tx, client %s", proto, a, r, local)
			}
		}
	}
}

// TestListenRefusesWhatIsNotAVIP: a wildcard, an IPv4-mapped, a multicast
// or a zero address, or none at all, is refused before anything is bound.
func TestListenRefusesWhatIsNotAVIP(t *testing.T) {
	for _, addrs := range [][]netip.Addr{
		nil,
		{netip.MustParseAddr("0.0.0.0")},
		{netip.MustParseAddr("::")},
		{netip.MustParseAddr("::ffff:127.0.0.1")},
		{netip.MustParseAddr("ff02::1")},
		{netip.MustParseAddr("127.0.0.1"), {}},
	} {
		if s, err := Listen(Config{Name: "x", Addrs: addrs, UDPPorts: []uint16{freePort(t, "udp")}}); err == nil {
			s.Close()
			t.Errorf("Listen on %v succeeded", addrs)
		}
	}
}

// serve runs s until the test ends, and fails the test if Serve fails.
func serve(t *testing.T, s *Server) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

func freePort(t *testing.T, proto string) uint16 {
	t.Helper()
	if proto == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return uint16(c.LocalAddr().(*net.UDPAddr).Port)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

// TestEchoLoopback: an echo connection gets the reply line, then every
// message back, as long as the client keeps it open.
func TestEchoLoopback(t *testing.T) {
	port := freePort(t, "tcp")
	s, err := Listen(Config{Name: "te", Addrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}, EchoPorts: []uint16{port}})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, s)
	c, err := net.DialTimeout("tcp", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port).String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	rd := bufio.NewReader(c)
	line, err := rd.ReadString('\n')
	if r, perr := ParseReply(line); err != nil || perr != nil || r.Target != "te" {
		t.Fatalf("first line %q: %v %v", line, err, perr)
	}
	for i := range 3 {
		msg := fmt.Sprintf("seq %d\n", i)
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		if got, err := rd.ReadString('\n'); err != nil || got != msg {
			t.Fatalf("echo %q, %v; want %q", got, err, msg)
		}
	}
}
