package bgp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/model"
)

// TestOnDemandRunsGoBGPOnlyWithBGPRouters: static routers never start
// GoBGP; the first BGP router does (with the VIPs announced before); when
// no router has BGP any more GoBGP stops and the gateway set empties. The
// peer is on loopback, so nothing leaves the host.
func TestOnDemandRunsGoBGPOnlyWithBGPRouters(t *testing.T) {
	ctx := context.Background()
	o, err := NewOnDemand(WithRouterID(netip.MustParseAddr("192.0.2.1")), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	static := []model.Router{{Name: "default/static", Address: netip.MustParseAddr("127.0.0.3"), Interface: "lo"}}
	vip := netip.MustParseAddr("20.0.0.1")
	if err := o.Apply(ctx, static); err != nil {
		t.Fatal(err)
	}
	if err := o.Announce(ctx, []netip.Addr{vip}); err != nil {
		t.Fatal(err)
	}
	if err := o.PeerDown(ctx, netip.MustParseAddr("127.0.0.3"), "x"); err != nil || o.Running() {
		t.Fatalf("static routers only: running %v, PeerDown %v; want GoBGP not started", o.Running(), err)
	}
	if st, err := o.Stats(ctx); err != nil || len(st) != 0 {
		t.Errorf("Stats without GoBGP = %v, %v", st, err)
	}

	withBGP := append(static, model.Router{Name: "default/gw", Address: netip.MustParseAddr("127.0.0.2"),
		BGP: &model.BGP{LocalASN: 65001, RemoteASN: 65002, HoldTime: 9 * time.Second, RemotePort: 1}})
	if err := o.Apply(ctx, withBGP); err != nil {
		t.Fatal(err)
	}
	if !o.Running() {
		t.Fatal("a BGP router did not start GoBGP")
	}
	sp := o.running
	if st, err := sp.Stats(ctx); err != nil || len(st) != 1 || st[0].Router != "default/gw" {
		t.Errorf("Stats = %+v, %v; want the BGP router's peer", st, err)
	}
	sp.mu.Lock()
	_, announced := sp.vips[vip]
	sp.mu.Unlock()
	if !announced {
		t.Error("the VIP announced before GoBGP started is not announced")
	}

	if err := o.Apply(ctx, static); err != nil {
		t.Fatal(err)
	}
	if o.Running() {
		t.Fatal("GoBGP still runs without BGP routers")
	}
	if g := o.updates.current(); len(g.IPv4)+len(g.IPv6) != 0 {
		t.Errorf("gateways after the stop: %+v, want none", g)
	}
	if err := o.Shutdown(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := o.Apply(ctx, withBGP); !errors.Is(err, ErrClosed) {
		t.Errorf("Apply after Shutdown = %v, want ErrClosed", err)
	}
}

func TestOnDemandRefusesAnIPv6RouterID(t *testing.T) {
	if _, err := NewOnDemand(WithRouterID(netip.MustParseAddr("fd00::1"))); err == nil {
		t.Error("an IPv6 router id was accepted")
	}
}
