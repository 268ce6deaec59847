package main

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/bgp"
	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/internal/uplink"
)

// startRouting creates the BGP speaker and the BFD supervision, feeding the
// return path's next hops to the reconcile loop, which applies the
// GatewayRouters and the VIP announcement (applier). GoBGP itself starts
// only once a GatewayRouter has bgp (bgp.OnDemand).
func (d *daemon) startRouting(_ context.Context) error {
	opts := []bgp.Option{bgp.WithLogger(d.log), bgp.WithWaitForBFD(d.cfg.waitForBFD)}
	if d.cfg.routerID != "" {
		opts = append(opts, bgp.WithRouterID(netip.MustParseAddr(d.cfg.routerID)))
	}
	sp, err := bgp.NewOnDemand(opts...)
	if err != nil {
		return fmt.Errorf("bgp: %w", err)
	}
	d.speaker = sp
	d.uplink = uplink.New(d.log, sp, d.loop.SetGateways)
	d.applier.routing = d.uplink
	d.registry.MustRegister(metrics.NewBFDCollector(routerBFD{d.uplink}), metrics.NewBGPCollector(d.bgpPeers))
	return nil
}

// routerBFD is what the BFD collector exports of the SLLBR's BFD server:
// the gateway routers' sessions, a set of series each, and the packets no
// session took. The endpoint liveness sessions, one per probed endpoint
// address (thousands at scale), are exported by the liveness collector,
// per endpoint and in total, not here.
type routerBFD struct{ u *uplink.Uplink }

func (r routerBFD) AllStats() []bfd.Stats       { return r.u.RouterSessionStats() }
func (r routerBFD) Discards() bfd.DiscardCounts { return r.u.BFD().Discards() }

// bgpPeers maps the speaker's statistics to the metrics' peer type.
func (d *daemon) bgpPeers() []metrics.BGPPeer {
	stats, err := d.speaker.Stats(context.Background())
	if err != nil {
		d.log.Warn("bgp statistics", "err", err)
		return nil
	}
	out := make([]metrics.BGPPeer, 0, len(stats))
	for _, s := range stats {
		out = append(out, metrics.BGPPeer{Peer: s.Peer, Router: s.Router, State: string(s.State),
			Established: s.State == bgp.StateEstablished, Uptime: s.Uptime, PrefixesAnnounced: s.Announced,
			PrefixesReceived: s.Received, PrefixesAccepted: s.Accepted, Flaps: s.Flaps})
	}
	return out
}
