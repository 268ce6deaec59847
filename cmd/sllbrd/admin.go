package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/bgp"
	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/internal/admin"
	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/model"
)

// adminBackend answers the admin socket (internal/admin) from the running
// daemon's parts, read at each request.
type adminBackend struct {
	engine    *dataplane.Engine
	kernel    kernelCounts                                       // the kernel path's counters; nil with --dataplane nfqueue
	bgp       func(ctx context.Context) ([]bgp.PeerStats, error) // nil: no speaker
	bfd       func() []bfd.Stats                                 // nil: no BFD
	status    *configStatus
	ready     func() (bool, []string)
	inSync    func() (bool, string) // the configuration source follows its API server
	gateway   string
	source    admin.Source
	queues    int
	holdLimit int // fragments held per queue at most
	copyRange int
	level     *slog.LevelVar
	log       *slog.Logger
	now       func() time.Time
	liveness  func() livenessView // the endpoint liveness checks; nil: none
}

var _ admin.Backend = (*adminBackend)(nil)

// kernelCounts is the engine's counters with the kernel path's added
// (dataplane.KernelStats), as the metrics read them, so that a route or
// endpoint reports its packets whichever path decided them. Each call
// reads the kernel's counter objects once (one netlink dump): show makes
// one call per request and looks every route and endpoint address up in
// it, never one read per address (one dump per address makes show's time
// grow with the square of the endpoints).
type kernelCounts interface {
	EachRoute(f func(route, service string, c dataplane.Count))
	EachEndpoint(f func(service string, id int, addr string, c dataplane.Count))
}

// endpointKey names an endpoint address's counter.
type endpointKey struct {
	service string
	id      int
	addr    string
}

// routeCounts reads every route's count once; nil without the kernel path
// (the engine's own counts, in Inspect, are then complete).
func (b *adminBackend) routeCounts() map[[2]string]dataplane.Count {
	if b.kernel == nil {
		return nil
	}
	out := map[[2]string]dataplane.Count{}
	b.kernel.EachRoute(func(route, service string, c dataplane.Count) { out[[2]string{route, service}] = c })
	return out
}

// endpointCounts reads every endpoint address's count once, as routeCounts.
func (b *adminBackend) endpointCounts() map[endpointKey]dataplane.Count {
	if b.kernel == nil {
		return nil
	}
	out := map[endpointKey]dataplane.Count{}
	b.kernel.EachEndpoint(func(service string, id int, addr string, c dataplane.Count) {
		out[endpointKey{service, id, addr}] = c
	})
	return out
}

// countOf returns counts[key], or the engine's own count c when counts
// does not hold key (no kernel path, or a route or address committed
// between the two reads).
func countOf[K comparable](counts map[K]dataplane.Count, key K, c dataplane.Count) dataplane.Count {
	if k, ok := counts[key]; ok {
		return k
	}
	return c
}

func (b *adminBackend) Routes(context.Context) (admin.Routes, error) {
	in := b.engine.Inspect()
	out := admin.Routes{Generation: in.Generation, Routes: []admin.Route{}}
	counts := b.routeCounts()
	for _, rv := range in.Routes {
		r := rv.Route
		c := countOf(counts, [2]string{r.Name, r.Service}, rv.Count)
		out.Routes = append(out.Routes, admin.Route{Name: r.Name, Priority: r.Priority, Service: r.Service,
			ServiceFound: rv.ServiceFound, Destinations: prefixAddrs(r),
			Sources: nonNil(r.Sources), Protocols: texts(r.Protocols, model.Protocol.String),
			SourcePorts: texts(r.SourcePorts, portRange), DestinationPorts: texts(r.DestinationPorts, portRange),
			ByteMatches: texts(r.ByteMatches, model.ByteMatch.String), Packets: c.Packets, Bytes: c.Bytes})
	}
	return out, nil
}

func (b *adminBackend) Services(context.Context) (admin.Services, error) {
	in := b.engine.Inspect()
	var lv livenessView
	if b.liveness != nil {
		lv = b.liveness()
	}
	now := b.now()
	counts := b.endpointCounts()
	out := admin.Services{Generation: in.Generation, Services: []admin.Service{}}
	for _, sv := range in.Services {
		svc := admin.Service{Name: sv.Name, MaxEndpoints: sv.MaxEndpoints, SCTPHashPorts: sv.SCTPHashPorts,
			IPv4: admin.Table{Size: sv.IPv4.Size, ActiveEndpoints: sv.IPv4.ActiveSlots},
			IPv6: admin.Table{Size: sv.IPv6.Size, ActiveEndpoints: sv.IPv6.ActiveSlots}, Endpoints: []admin.Endpoint{},
			Liveness: serviceLiveness(lv.services[sv.Name])}
		for _, ep := range sv.Endpoints {
			addr := func(f *dataplane.EndpointFamilyView, size int) *admin.EndpointAddress {
				a := endpointAddress(counts, sv.Name, ep.ID, f, size)
				if a != nil {
					a.Liveness = addressLiveness(lv, sv.Name, a.Address, now)
				}
				return a
			}
			svc.Endpoints = append(svc.Endpoints, admin.Endpoint{Service: sv.Name, ID: ep.ID, Mark: ep.Mark,
				IPv4: addr(ep.IPv4, sv.IPv4.Size), IPv6: addr(ep.IPv6, sv.IPv6.Size)})
		}
		out.Services = append(out.Services, svc)
	}
	return out, nil
}

func endpointAddress(counts map[endpointKey]dataplane.Count, service string, id int, f *dataplane.EndpointFamilyView, size int) *admin.EndpointAddress {
	if f == nil {
		return nil
	}
	c := countOf(counts, endpointKey{service, id, f.Addr.String()}, f.Count)
	return &admin.EndpointAddress{Address: f.Addr, Ready: f.Ready, Entries: f.Entries, Share: share(f.Entries, size),
		Packets: c.Packets, Bytes: c.Bytes}
}

// serviceLiveness writes a Service's liveness configuration for show.
func serviceLiveness(l model.Liveness) admin.ServiceLiveness {
	if l.Off() {
		return admin.ServiceLiveness{}
	}
	return admin.ServiceLiveness{On: true, Probe: l.Probe.String(), IntervalSeconds: l.Interval.Seconds(), Multiplier: l.Multiplier,
		DetectionSeconds: l.Detection().Seconds(), HoldDownSeconds: l.HoldDown.Seconds()}
}

// addressLiveness writes what the probes found of a Service's endpoint
// address (nil: not probed).
func addressLiveness(lv livenessView, service string, a netip.Addr, now time.Time) *admin.AddressLiveness {
	s, ok := lv.state(service, a)
	if !ok {
		return nil
	}
	return &admin.AddressLiveness{Probe: lv.probe(service), Alive: s.Alive, Since: s.Since, SinceSeconds: max(now.Sub(s.Since), 0).Seconds(),
		Transitions: s.Transitions, LastReply: s.LastReply, RTTSeconds: s.RTT.Seconds()}
}

func share(entries, size int) float64 {
	if size == 0 {
		return 0
	}
	return float64(entries) / float64(size)
}

func (b *adminBackend) Sessions(ctx context.Context) (admin.Sessions, error) {
	out := admin.Sessions{BGP: []admin.BGPPeer{}, BFD: []admin.BFDSession{}}
	if b.bgp != nil {
		peers, err := b.bgp(ctx)
		if err != nil {
			out.BGPError = err.Error() // what could be read is still shown
		}
		for _, p := range peers {
			out.BGP = append(out.BGP, admin.BGPPeer{Router: p.Router, Peer: p.Peer, State: string(p.State),
				AdminDown: p.AdminDown, UptimeSeconds: p.Uptime.Seconds(), PrefixesSent: p.Announced,
				PrefixesReceived: p.Received, PrefixesAccepted: p.Accepted, Flaps: p.Flaps, LastDownReason: p.LastDownReason})
		}
	}
	if b.bfd != nil {
		for _, s := range b.bfd() {
			out.BFD = append(out.BFD, bfdSession(s))
		}
		slices.SortFunc(out.BFD, func(a, b admin.BFDSession) int {
			return cmp.Or(a.Peer.Compare(b.Peer), cmp.Compare(a.Interface, b.Interface))
		})
	}
	return out, nil
}

func bfdSession(s bfd.Stats) admin.BFDSession {
	var rx time.Duration
	if s.RemoteDetectMult > 0 { // Detection Time = remote multiplier x agreed receive interval (RFC 5880 6.8.4)
		rx = s.DetectionTime / time.Duration(s.RemoteDetectMult)
	}
	return admin.BFDSession{Peer: s.Key.Peer, Interface: s.Key.Interface, Multihop: s.Key.Multihop,
		State: metrics.BFDStateLabel(s.State), RemoteState: metrics.BFDStateLabel(s.RemoteState),
		TxIntervalSeconds: s.TxInterval.Seconds(), RxIntervalSeconds: rx.Seconds(), DetectionTimeSeconds: s.DetectionTime.Seconds(),
		LocalDiagnostic: metrics.BFDDiagnosticLabel(s.LocalDiag), RemoteDiagnostic: metrics.BFDDiagnosticLabel(s.RemoteDiag),
		UpTransitions: s.UpTransitions, DownTransitions: s.DownTransitions, SocketError: s.SocketError}
}

func (b *adminBackend) Fragments(context.Context) (admin.Fragments, error) {
	v := b.engine.InspectFragments(b.now())
	return admin.Fragments{Capacity: v.Capacity, Entries: v.Entries, Held: v.Held, LifetimeSeconds: v.Lifetime.Seconds(),
		HoldLimitPerQueue: b.holdLimit, Queues: b.queues, Stored: v.Stats.Stored, Hits: v.Stats.Hits, Misses: v.Stats.Misses,
		HeldTotal: v.Stats.Held, Released: v.Stats.Released, Expired: v.Stats.Expired, Evictions: v.Stats.Evictions}, nil
}

func (b *adminBackend) Config(context.Context) (admin.Config, error) {
	st := b.status.snapshot()
	ready, why := b.ready()
	src := b.source
	src.Error = st.sourceErr
	problems := st.problems
	if b.inSync != nil {
		if ok, reason := b.inSync(); !ok {
			problems = append(problems, "configuration source not in sync, the last state is served: "+reason)
		}
	}
	return admin.Config{Gateway: b.gateway, Source: src, Generation: b.engine.Generation(),
		AppliedGeneration: st.appliedGen, AppliedAt: st.appliedAt, LastAttempt: st.lastAttempt, LastError: st.lastErr,
		Ready: ready, NotReady: nonNil(why), Problems: nonNil(problems)}, nil
}

func (b *adminBackend) Explain(_ context.Context, f admin.Flow) (admin.Explanation, error) {
	pr, err := probeOf(f, b.copyRange)
	if err != nil {
		return admin.Explanation{}, err
	}
	x, err := b.engine.Explain(pr)
	if err != nil {
		return admin.Explanation{}, err
	}
	out := admin.Explanation{Flow: f, Generation: x.Generation, Decoded: x.Kind.String(), Verdict: x.Verdict.String(),
		Reason: x.Reason.String(), Mark: x.Mark, Misses: []admin.Miss{}}
	if r := x.Route; r != nil {
		out.Route = &admin.ExplainedRoute{Name: r.Name, Priority: r.Priority, Service: r.Service, Rank: r.Rank}
	}
	for _, m := range x.Misses {
		out.Misses = append(out.Misses, admin.Miss{Route: m.Route, Priority: m.Priority, Check: m.Check, Detail: m.Detail})
	}
	if x.Balanced {
		out.Lookup = &admin.Lookup{Family: int(x.Family), Hash: fmt.Sprintf("%#08x", x.Hash), TableSize: x.TableSize,
			ActiveEndpoints: x.ActiveSlots}
	}
	if ep := x.Endpoint; ep != nil {
		out.Endpoint = &admin.ExplainedEndpoint{ID: ep.ID, Address: ep.Addr, Mark: ep.Mark, Ready: ep.Ready,
			Entries: ep.Entries, Share: share(ep.Entries, x.TableSize)}
	}
	return out, nil
}

// probeOf turns an explain request into the dataplane's probe.
func probeOf(f admin.Flow, copyRange int) (dataplane.Probe, error) {
	protos := map[string]model.Protocol{"tcp": model.ProtoTCP, "udp": model.ProtoUDP, "sctp": model.ProtoSCTP,
		"icmp": model.ProtoICMP, "icmpv6": model.ProtoICMPv6}
	proto, ok := protos[f.Protocol]
	if !ok {
		return dataplane.Probe{}, fmt.Errorf("protocol %q: want one of %v", f.Protocol, admin.Protocols)
	}
	return dataplane.Probe{Protocol: proto, Src: addrPort(f.Source, f.SourcePort), Dst: addrPort(f.Destination, f.DestinationPort),
		Payload: f.Payload, CopyRange: copyRange}, nil
}

func (b *adminBackend) LogLevel(_ context.Context, level string) (admin.LogLevel, error) {
	was := b.level.Level()
	if level == "" {
		return admin.LogLevel{Level: was.String()}, nil
	}
	l, err := admin.ParseLevel(level)
	if err != nil {
		return admin.LogLevel{}, err
	}
	b.level.Set(l)
	b.log.Log(context.Background(), max(l, slog.LevelInfo), "log level changed", "level", l.String(), "was", was.String())
	return admin.LogLevel{Level: l.String(), Previous: was.String()}, nil
}

// prefixAddrs lists a compiled route's destinations (single addresses).
func prefixAddrs(r model.Route) []netip.Addr {
	out := make([]netip.Addr, len(r.Destinations))
	for i, d := range r.Destinations {
		out[i] = d.Addr()
	}
	return out
}

func portRange(r model.PortRange) string {
	if r.From == r.To {
		return strconv.Itoa(int(r.From))
	}
	return strconv.Itoa(int(r.From)) + "-" + strconv.Itoa(int(r.To))
}

func addrPort(a netip.Addr, port uint16) netip.AddrPort { return netip.AddrPortFrom(a, port) }

// texts writes each item with str; never nil, so JSON has [] not null.
func texts[T any](items []T, str func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = str(it)
	}
	return out
}

// nonNil returns s, or an empty slice for nil, so JSON has [] not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
