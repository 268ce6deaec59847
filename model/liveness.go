package model

import (
	"strconv"
	"time"
)

// Liveness configures how each SLLBR checks, on its own, that the endpoints
// of a Service answer on the target network (ICMP echo to each ready
// endpoint address), in addition to the API's readiness. An endpoint that
// misses Multiplier consecutive Intervals is dead for this SLLBR: it leaves
// the Service's Maglev table here only, keeping its identifier and fwmark.
// It is alive again once replies have come for HoldDown without a miss of
// Multiplier Intervals.
//
// The zero value is off: nothing is probed and the API's readiness alone
// decides. kube/translate fills in the defaults and enforces the bounds;
// a Liveness that is not Off has Interval > 0, Multiplier >= 1 and
// HoldDown >= 0.
type Liveness struct {
	Interval   time.Duration // between two probes of one endpoint; 0: off
	Multiplier int           // intervals without a valid reply before an endpoint is dead
	HoldDown   time.Duration // how long a dead endpoint must answer before it is alive again
	Probe      Probe         // what answers: the target's kernel (ICMP) or its target side (BFD)
}

// Probe is how an SLLBR checks that an endpoint answers.
type Probe uint8

const (
	// ProbeICMP sends ICMP or ICMPv6 echo requests, answered by the
	// target's kernel: it finds a dead node or a broken network, not a
	// target whose processes are frozen. It needs nothing on the target.
	ProbeICMP Probe = iota
	// ProbeBFD runs a BFD session (RFC 5881) with the endpoint, answered by
	// its target side (`sllbrd target`): it also finds a target whose
	// processes stopped. The target side runs the session with the same
	// Interval and Multiplier (the controller writes them to the pod).
	ProbeBFD
)

// String returns the annotation's value of the probe key.
func (p Probe) String() string {
	if p == ProbeBFD {
		return "bfd"
	}
	return "icmp"
}

// Off reports whether liveness checking is off for the Service.
func (l Liveness) Off() bool { return l.Interval == 0 }

// Detection is the time from the last reply of an endpoint to it being
// found dead: Interval × Multiplier; 0 when off.
func (l Liveness) Detection() time.Duration {
	if l.Off() {
		return 0
	}
	return l.Interval * time.Duration(l.Multiplier)
}

// String returns the annotation form ("off", or
// "interval=200ms,multiplier=4,hold-down=5s", with ",probe=bfd" when the
// probe is BFD) that kube/translate reads.
func (l Liveness) String() string {
	if l.Off() {
		return "off"
	}
	s := "interval=" + l.Interval.String() + ",multiplier=" + strconv.Itoa(l.Multiplier) +
		",hold-down=" + l.HoldDown.String()
	if l.Probe != ProbeICMP {
		s += ",probe=" + l.Probe.String()
	}
	return s
}
