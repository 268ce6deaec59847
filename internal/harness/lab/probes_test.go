package lab

import (
	"context"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestProbeOptionsDefaults(t *testing.T) {
	o, err := ProbeOptions{VIPs: DefaultVIPs, UDPPort: 5000, TCPPort: 5001, FragSrcPort: 30000, Ping: true, SCTPPort: 9}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := ProbeOptions{VIPs: DefaultVIPs, UDPPort: 5000, UDPFlows: 4, UDPSrcBase: 20000, Interval: 200 * time.Millisecond,
		TCPPort: 5001, TCPPerSecond: 5, FragBytes: 3000, FragSrcPort: 30000, Ping: true, PingID: defaultPingID,
		SCTPPort: 9, SCTPSrcPort: 20000, Timeout: time.Second}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", o, want)
	}
}

func TestProbeOptionsRefusals(t *testing.T) {
	v4 := []netip.Addr{DefaultVIPs[0]}
	two := []netip.Addr{DefaultVIPs[0], DefaultVIPs[1]}
	for _, tt := range []struct {
		name string
		o    ProbeOptions
		want string
	}{
		{"no VIP", ProbeOptions{UDPPort: 1}, "VIPs"},
		{"invalid VIP", ProbeOptions{VIPs: []netip.Addr{{}}, UDPPort: 1}, "invalid"},
		{"mapped VIP", ProbeOptions{VIPs: []netip.Addr{netip.MustParseAddr("::ffff:20.0.0.1")}, UDPPort: 1}, "mapped"},
		{"repeated VIP", ProbeOptions{VIPs: []netip.Addr{DefaultVIPs[0], DefaultVIPs[0]}, UDPPort: 1}, "repeated"},
		{"too many VIPs", ProbeOptions{VIPs: make([]netip.Addr, 17), UDPPort: 1}, "17 VIPs"},
		{"nothing", ProbeOptions{VIPs: v4}, "nothing to probe"},
		{"frag without udp", ProbeOptions{VIPs: v4, FragSrcPort: 30000, Ping: true}, "FragSrcPort without UDPPort"},
		{"too many flows", ProbeOptions{VIPs: v4, UDPPort: 1, UDPFlows: 65}, "UDP flows"},
		{"negative flows", ProbeOptions{VIPs: v4, UDPPort: 1, UDPFlows: -1}, "UDP flows"},
		{"fast", ProbeOptions{VIPs: v4, Ping: true, Interval: time.Millisecond}, "interval"},
		{"tcp rate", ProbeOptions{VIPs: v4, TCPPort: 1, TCPPerSecond: 101}, "TCP connections"},
		{"frag size", ProbeOptions{VIPs: v4, UDPPort: 1, FragSrcPort: 30000, FragBytes: 70000}, "fragmented"},
		{"timeout", ProbeOptions{VIPs: v4, Ping: true, Timeout: time.Minute}, "timeout"},
		{"udp ports overflow", ProbeOptions{VIPs: two, UDPPort: 1, UDPFlows: 4, UDPSrcBase: 65530}, "do not fit"},
		{"frag ports overflow", ProbeOptions{VIPs: two, UDPPort: 1, FragSrcPort: 65535}, "do not fit"},
		// VIP 0 uses 20000-20003, VIP 1 20004-20007: 20007 is taken.
		{"overlap", ProbeOptions{VIPs: two, UDPPort: 1, FragSrcPort: 20007}, "overlap"},
		{"sctp source without port", ProbeOptions{VIPs: v4, Ping: true, SCTPSrcPort: 30000}, "SCTPSrcPort without SCTPPort"},
		{"sctp ports overflow", ProbeOptions{VIPs: two, SCTPPort: 9, SCTPSrcPort: 65535}, "do not fit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.o.withDefaults()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := (ProbeOptions{VIPs: two, UDPPort: 1, FragSrcPort: 20008}).withDefaults(); err != nil {
		t.Errorf("frag ports right after the udp ones: %v", err)
	}
	if _, err := (ProbeOptions{VIPs: two, SCTPPort: 9, SCTPSrcPort: 65534}).withDefaults(); err != nil {
		t.Errorf("sctp only, source ports up to 65535: %v", err)
	}
}

// TestProbersLayout: one prober per enabled kind and VIP, with the
// documented source ports.
func TestProbersLayout(t *testing.T) {
	o, err := ProbeOptions{VIPs: []netip.Addr{DefaultVIPs[0], DefaultVIPs[2]}, UDPPort: 5000, UDPFlows: 3,
		UDPSrcBase: 40000, TCPPort: 80, FragSrcPort: 41000, Ping: true, SCTPPort: 9, SCTPSrcPort: 40001}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range o.probers() {
		switch p := p.(type) {
		case *udpProber:
			got = append(got, fmt.Sprintf("%s %s %dx%d", p.kind, p.vip, p.srcBase, p.flows))
		case *tcpProber:
			got = append(got, p.kind+" "+p.vip.String())
		case *pingProber:
			got = append(got, p.kind+" "+p.vip.String())
		case *sctpProber:
			got = append(got, fmt.Sprintf("%s %s %d", p.kind, p.vip, p.srcPort))
		}
	}
	want := []string{
		"udp4 20.0.0.1 40000x3", "frag4 20.0.0.1 41000x1", "tcp4 20.0.0.1", "ping4 20.0.0.1", "sctp4 20.0.0.1 40001",
		"udp6 2001:db8::1 40003x3", "frag6 2001:db8::1 41001x1", "tcp6 2001:db8::1", "ping6 2001:db8::1", "sctp6 2001:db8::1 40002",
	}
	if !slices.Equal(got, want) {
		t.Errorf("probers:\n got %q\nwant %q", got, want)
	}
	o.UDPPort, o.FragSrcPort, o.TCPPort, o.SCTPPort = 0, 0, 0, 0
	if n := len(o.probers()); n != 2 {
		t.Errorf("ping only: %d probers, want 2", n)
	}
}

func TestStartProbesRefusesNoRecorder(t *testing.T) {
	var l Lab // never reached: the options are checked first
	if _, err := l.StartProbes(context.Background(), ProbeOptions{VIPs: DefaultVIPs[:1], Ping: true}, nil); err == nil {
		t.Error("StartProbes without a record function succeeded")
	}
}

func TestStreamMessage(t *testing.T) {
	if got := streamMessage(3, 7, nil); got != "3 7\n" {
		t.Errorf("without payload: %q", got)
	}
	if got := streamMessage(3, 7, []byte{0x00, 0xab, 0xff}); got != "3 7 00abff\n" {
		t.Errorf("with payload: %q", got)
	}
}

func TestStreamOptionsRefusals(t *testing.T) {
	base := StreamOptions{VIP: DefaultVIPs[0], Port: 7000}
	for _, o := range []StreamOptions{
		{Port: 7000},
		{VIP: DefaultVIPs[0], Count: 1001, Port: 7000},
		func() StreamOptions { o := base; o.PayloadBytes = -1; return o }(),
		func() StreamOptions { o := base; o.PayloadBytes = maxStreamPayload + 1; return o }(),
		func() StreamOptions { o := base; o.StallAfter = -time.Second; return o }(),
		func() StreamOptions { o := base; o.Count, o.SrcPortBase = 16, 65530; return o }(),
	} {
		if _, err := o.withDefaults(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if o, err := base.withDefaults(); err != nil || o.PayloadBytes != 0 || o.StallAfter != 0 {
		t.Errorf("defaults: %+v, %v; want no payload, no stall threshold", o, err)
	}
}
