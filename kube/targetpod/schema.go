package targetpod

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sllbrd/sllbrd/internal/targetnet"
)

// SchemaVersion is the version of Desired and Status this sllbrd writes
// and reads. A reader refuses other versions (it keeps what it applied).
const SchemaVersion = 1

// NextHops are addresses per family.
type NextHops struct {
	IPv4 []netip.Addr `json:"ipv4,omitempty"`
	IPv6 []netip.Addr `json:"ipv6,omitempty"`
}

func (n NextHops) all() []netip.Addr { return append(slices.Clone(n.IPv4), n.IPv6...) }

// nextHopsOf splits sorted addresses by family.
func nextHopsOf(addrs []netip.Addr) NextHops {
	var n NextHops
	for _, a := range addrs {
		if a.Is4() {
			n.IPv4 = append(n.IPv4, a)
		} else {
			n.IPv6 = append(n.IPv6, a)
		}
	}
	return n
}

// Gateway is one Gateway's part of the desired configuration.
type Gateway struct {
	Name string `json:"name"`
	// Table is the pod's routing table of the Gateway, in
	// targetnet.TableMin..TableMax, unique in the pod, kept for the
	// Gateway's life on the pod.
	Table uint32 `json:"table"`
	// Subnets are the Gateway's network-subnets: the next hops lie in
	// them, and the interface holding an address in them carries the
	// routes.
	Subnets []netip.Prefix `json:"subnets"`
	// VIPs are the destinations of the L34Routes of the Gateway to the
	// pod's Services: /32 or /128.
	VIPs []netip.Prefix `json:"vips"`
	// NextHops are the addresses of the Gateway's ready SLLBR pods on its
	// networks.
	NextHops NextHops `json:"nextHops"`
	// Liveness, when set, asks the target side to run a BFD session
	// (RFC 5881) with every next hop, so that each SLLBR finds this pod
	// dead when its target side stops answering (docs/liveness.md). Absent:
	// no session. Written only for Gateways with a Service whose endpoint
	// liveness probe is bfd, so readers older than the field see no change
	// elsewhere.
	Liveness *GatewayLiveness `json:"liveness,omitempty"`
}

// GatewayLiveness is the BFD timing of a Gateway's sessions on the pod:
// the strictest (model.Liveness.Detection, then Interval) of the pod's
// Services of the Gateway whose probe is bfd. Each side sends every
// Interval and requires one packet every Interval; each finds the other
// down after Multiplier Intervals without one. Bounds are the annotation's:
// kube.MinLivenessInterval..kube.MaxLivenessInterval in whole milliseconds,
// 1..kube.MaxLivenessMultiplier, the product at most
// kube.MaxLivenessDetection.
type GatewayLiveness struct {
	IntervalMilliseconds int64 `json:"intervalMilliseconds"`
	Multiplier           int   `json:"multiplier"`
}

// Interval returns the interval as a Duration.
func (l GatewayLiveness) Interval() time.Duration {
	return time.Duration(l.IntervalMilliseconds) * time.Millisecond
}

// Desired is the value of kube.AnnotationTargetNetwork.
type Desired struct {
	Version int `json:"version"`
	// Generation increases with every change of the content.
	Generation int64     `json:"generation"`
	Gateways   []Gateway `json:"gateways"`
}

// GatewayStatus is what the kernel holds for one Gateway.
type GatewayStatus struct {
	Name     string         `json:"name"`
	Table    uint32         `json:"table"`
	VIPs     []netip.Prefix `json:"vips"`
	NextHops NextHops       `json:"nextHops"`
	// Interfaces names the interface of the next hops, per family ("ipv4",
	// "ipv6").
	Interfaces map[string]string `json:"interfaces,omitempty"`
	// KeptNextHops lists the families whose desired next hops are empty:
	// the last ones stay in place.
	KeptNextHops []string `json:"keptNextHops,omitempty"`
	// DownNextHops are desired next hops left out of the routes (so not in
	// NextHops) because their BFD session with the pod is down (Gateways
	// with liveness only); absent when there are none. The pod stays
	// ready: the replies take the other next hops.
	DownNextHops *NextHops `json:"downNextHops,omitempty"`
	// AllNextHopsDown lists the families ("ipv4", "ipv6") whose desired
	// next hops all have their BFD session down: all stay in the routes
	// (never none).
	AllNextHopsDown []string `json:"allNextHopsDown,omitempty"`
}

// Status is the value of kube.AnnotationTargetNetworkStatus.
type Status struct {
	Version int `json:"version"`
	// ObservedGeneration is the generation of Desired last applied (0:
	// none, or no annotation).
	ObservedGeneration int64 `json:"observedGeneration"`
	// Ready says whether the desired generation is applied without error
	// or conflict (what /readyz of `sllbrd target` says).
	Ready bool `json:"ready"`
	// Agent is who wrote it: SidecarAgent ("sidecar") or NodeAgent(node)
	// ("node/<node name>"); empty from a sidecar older than the field.
	Agent     string          `json:"agent,omitempty"`
	Gateways  []GatewayStatus `json:"gateways,omitempty"`
	Conflicts []string        `json:"conflicts,omitempty"`
	Errors    []string        `json:"errors,omitempty"`
}

// ParseDesired reads an annotation value and checks it completely
// (Validate); on error nothing of it may be applied.
func ParseDesired(s string) (Desired, error) {
	var d Desired
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return Desired{}, fmt.Errorf("not a target network configuration: %w", err)
	}
	if dec.More() {
		return Desired{}, errors.New("not a target network configuration: data after the JSON object")
	}
	if d.Version != SchemaVersion {
		return Desired{}, fmt.Errorf("version %d: this sllbrd reads version %d", d.Version, SchemaVersion)
	}
	if err := d.Validate(); err != nil {
		return Desired{}, err
	}
	return d, nil
}

// Net is the configuration for targetnet.
func (d Desired) Net() targetnet.Desired {
	var out targetnet.Desired
	for _, g := range d.Gateways {
		out.Gateways = append(out.Gateways, targetnet.Gateway{Name: g.Name, Table: g.Table,
			Subnets: g.Subnets, VIPs: g.VIPs, NextHops: g.NextHops.all()})
	}
	return out
}

// Marshal returns the annotation value of d.
func (d Desired) Marshal() string {
	b, err := json.Marshal(d)
	if err != nil { // netip types and plain values: cannot fail
		panic(fmt.Sprintf("target: marshal desired: %v", err))
	}
	return string(b)
}

// Marshal returns the annotation value of s.
func (s Status) Marshal() string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("target: marshal status: %v", err))
	}
	return string(b)
}

// ParseStatus reads a status annotation value.
func ParseStatus(v string) (Status, error) {
	var s Status
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return Status{}, fmt.Errorf("not a target network status: %w", err)
	}
	return s, nil
}

// StatusOf describes an apply's result.
func StatusOf(generation int64, res targetnet.Result, err error) Status {
	s := Status{Version: SchemaVersion, ObservedGeneration: generation, Conflicts: res.Conflicts}
	for _, g := range res.Gateways {
		gs := GatewayStatus{Name: g.Name, Table: g.Table, VIPs: g.VIPs, NextHops: nextHopsOf(g.NextHops)}
		for f, name := range g.Interfaces {
			if gs.Interfaces == nil {
				gs.Interfaces = map[string]string{}
			}
			gs.Interfaces[f.String()] = name
		}
		for _, f := range g.Kept {
			gs.KeptNextHops = append(gs.KeptNextHops, f.String())
		}
		if len(g.Down) > 0 {
			down := nextHopsOf(g.Down)
			gs.DownNextHops = &down
		}
		for _, f := range g.AllDown {
			gs.AllNextHopsDown = append(gs.AllNextHopsDown, f.String())
		}
		s.Gateways = append(s.Gateways, gs)
	}
	s.Errors = errorLines(err)
	s.Ready = err == nil && len(s.Conflicts) == 0
	return s
}

// errorLines splits an error into its lines (errors.Join puts one error
// per line).
func errorLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}
