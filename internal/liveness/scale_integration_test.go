package liveness

import (
	"flag"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

var (
	scaleWindow   = flag.Duration("liveness.window", 10*time.Second, "TestIntegrationScale: how long CPU and packet rates are measured")
	scaleFamilies = flag.String("liveness.families", "dual", "TestIntegrationScale: ipv4, ipv6 or dual (1,000 addresses of each family probed)")
)

const scaleAddrs = 1000

// TestIntegrationScale probes 1,000 IPv4 and 1,000 IPv6 addresses (one
// target namespace holding them all on one interface, routed by the
// prober's namespace through one next hop) at the default config (200 ms ×
// 4) and measures the process's CPU (getrusage; it includes the kernel's
// work for the probes and, as this kernel has no IRQ time accounting, the
// softirq work of the target's replies on the veth) and the packet rates
// over -liveness.window. It fails if any address is found dead, or if the
// rates are not one probe per address per interval.
func TestIntegrationScale(t *testing.T) {
	require.Root(t)
	require.Programs(t, "ip")
	var fams []string
	switch *scaleFamilies {
	case "ipv4", "ipv6":
		fams = []string{*scaleFamilies}
	case "dual":
		fams = []string{"ipv4", "ipv6"}
	default:
		t.Fatalf("-liveness.families=%q: want ipv4, ipv6 or dual", *scaleFamilies)
	}
	p, _ := netns.New(t, "sllbrd-live-sp")
	tgt, _ := netns.New(t, "sllbrd-live-st")
	netns.Run(t, "ip", "link", "add", "eth0", "netns", tgt, "type", "veth", "peer", "name", "eth0", "netns", p)
	batch(t, p, "link set lo up", "link set eth0 up",
		"address add 10.25.0.1/24 dev eth0", "address add fd00:25::1/64 dev eth0 nodad",
		"route add 10.24.0.0/22 via 10.25.0.2", "route add fd00:24::/116 via fd00:25::2")
	cmds := []string{"link set lo up", "link set eth0 up",
		"address add 10.25.0.2/24 dev eth0", "address add fd00:25::2/64 dev eth0 nodad"}
	var addrs []netip.Addr
	for i := 1; i <= scaleAddrs; i++ {
		a4 := netip.AddrFrom4([4]byte{10, 24, byte(i >> 8), byte(i)})
		a6 := netip.MustParseAddr(fmt.Sprintf("fd00:24::%x", i))
		cmds = append(cmds, "address add "+a4.String()+"/32 dev eth0", "address add "+a6.String()+"/128 dev eth0 nodad")
		for _, f := range fams {
			if f == "ipv4" {
				addrs = append(addrs, a4)
			} else {
				addrs = append(addrs, a6)
			}
		}
	}
	batch(t, tgt, cmds...)

	var log changeLog
	pr := startProber(t, p, WithOnChange(log.add))
	cfg := Config{Interval: 200 * time.Millisecond, Multiplier: 4, HoldDown: 5 * time.Second}
	pr.Set(targets(cfg, addrs...))
	time.Sleep(cfg.Detection() + 5*cfg.Interval) // every address probed several times

	var ru0, ru1 unix.Rusage
	s0, t0 := pr.Stats(), time.Now()
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(*scaleWindow)
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru1); err != nil {
		t.Fatal(err)
	}
	s1, window := pr.Stats(), time.Since(t0)

	user := time.Duration(ru1.Utime.Nano() - ru0.Utime.Nano())
	sys := time.Duration(ru1.Stime.Nano() - ru0.Stime.Nano())
	sent, valid := s1.ProbesSent-s0.ProbesSent, s1.RepliesValid-s0.RepliesValid
	perSec := func(n uint64) float64 { return float64(n) / window.Seconds() }
	t.Logf("%d addresses (%s) every %v for %v: %.0f probes/s sent, %.0f valid replies/s; CPU %.1f%% of one core (user %v, system %v), %.1f µs per probe and its reply",
		len(addrs), *scaleFamilies, cfg.Interval, window.Round(time.Millisecond), perSec(sent), perSec(valid),
		100*float64(user+sys)/float64(window), user.Round(time.Millisecond), sys.Round(time.Millisecond),
		float64((user+sys)/time.Microsecond)/float64(sent))

	want := float64(len(addrs)) * float64(window) / float64(cfg.Interval)
	if float64(sent) < want*0.9 || float64(sent) > want*1.03 {
		t.Errorf("%d probes sent in %v, want %.0f (-10%%, +3%%)", sent, window, want)
	}
	if valid+uint64(len(addrs)) < sent || valid > sent+uint64(len(addrs)) {
		t.Errorf("%d valid replies to %d probes (± one per address at the window's edges)", valid, sent)
	}
	if cs := log.all(); len(cs) != 0 {
		t.Errorf("%d changes, want none; the first: %+v", len(cs), cs[0])
	}
	if s1.SendErrors != 0 || s1.ReceiveErrors != 0 || s1.ReceiveDrops != 0 || s1.Ignored.Total() != 0 {
		t.Errorf("stats %+v", s1)
	}
	if d := pr.Dead(); len(d) != 0 {
		t.Errorf("%d addresses dead", len(d))
	}
}
