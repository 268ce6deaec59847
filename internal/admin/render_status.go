package admin

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteText implements Text.
func (s Sessions) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "BGP: %d peers\n", len(s.BGP))
	if s.BGPError != "" {
		fmt.Fprintf(w, "  (incomplete: %s)\n", s.BGPError)
	}
	if len(s.BGP) > 0 {
		t := newTable(w)
		t.row("  ROUTER", "PEER", "STATE", "UPTIME", "SENT", "RECEIVED", "ACCEPTED", "FLAPS", "LAST DOWN")
		for _, p := range s.BGP {
			state := p.State
			if p.AdminDown {
				state += " (held down by BFD)"
			}
			t.row("  "+p.Router, p.Peer, state, seconds(p.UptimeSeconds), p.PrefixesSent, p.PrefixesReceived,
				p.PrefixesAccepted, p.Flaps, orDash(p.LastDownReason))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "BFD: %d sessions\n", len(s.BFD))
	if len(s.BFD) == 0 {
		return nil
	}
	t := newTable(w)
	t.row("  PEER", "INTERFACE", "HOPS", "STATE", "REMOTE", "TX", "RX", "DETECT", "DIAGNOSTIC", "REMOTE DIAGNOSTIC", "UP/DOWN", "SOCKET ERROR")
	for _, b := range s.BFD {
		hops := "single"
		if b.Multihop {
			hops = "multi"
		}
		t.row(fmt.Sprint("  ", b.Peer), orDash(b.Interface), hops, b.State, b.RemoteState,
			seconds(b.TxIntervalSeconds), seconds(b.RxIntervalSeconds), seconds(b.DetectionTimeSeconds),
			b.LocalDiagnostic, b.RemoteDiagnostic, fmt.Sprintf("%d/%d", b.UpTransitions, b.DownTransitions), orDash(b.SocketError))
	}
	return t.flush()
}

// WriteText implements Text.
func (f Fragments) WriteText(w io.Writer) error {
	t := newTable(w)
	t.row("entries", fmt.Sprintf("%d of %d", f.Entries, f.Capacity))
	t.row("held now", fmt.Sprintf("%d (at most %d per queue, %d queues)", f.Held, f.HoldLimitPerQueue, f.Queues))
	t.row("lifetime", seconds(f.LifetimeSeconds))
	t.row("stored", f.Stored)
	t.row("hits", f.Hits)
	t.row("misses", f.Misses)
	t.row("held total", f.HeldTotal)
	t.row("released", f.Released)
	t.row("expired", f.Expired)
	t.row("evictions", f.Evictions)
	return t.flush()
}

// WriteText implements Text.
func (c Config) WriteText(w io.Writer) error {
	t := newTable(w)
	t.row("gateway", c.Gateway)
	t.row("source", c.Source.describe())
	if c.Source.Error != "" {
		t.row("source error", c.Source.Error+" (the last good configuration stays applied)")
	}
	t.row("generation", fmt.Sprintf("%d (the packet path decides with it)", c.Generation))
	applied := "none yet"
	if !c.AppliedAt.IsZero() {
		applied = fmt.Sprintf("%d at %s", c.AppliedGeneration, timestamp(c.AppliedAt))
	}
	t.row("applied", applied)
	last := "none yet"
	if !c.LastAttempt.IsZero() {
		last = timestamp(c.LastAttempt) + ": ok"
		if c.LastError != "" {
			last = timestamp(c.LastAttempt) + ": failed, retrying: " + c.LastError
		}
	}
	t.row("last attempt", last)
	ready := "yes"
	if !c.Ready {
		ready = "no: " + strings.Join(c.NotReady, "; ")
	}
	t.row("ready", ready)
	if len(c.Problems) == 0 {
		t.row("problems", "none")
	}
	for i, p := range c.Problems {
		t.row(map[bool]string{true: "problems", false: ""}[i == 0], p)
	}
	return t.flush()
}

func (s Source) describe() string {
	if s.Kind == "file" {
		return "file " + s.Path
	}
	return fmt.Sprintf("API server %s, namespace %s", s.Server, s.Namespace)
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// WriteText implements Text.
func (x Explanation) WriteText(w io.Writer) error {
	t := newTable(w)
	t.row("flow", x.Flow.String()+" (decoded as "+x.Decoded+")")
	t.row("generation", x.Generation)
	route := "none"
	if r := x.Route; r != nil {
		route = fmt.Sprintf("%s (priority %d, #%d in show routes) -> service %s", r.Name, r.Priority, r.Rank, r.Service)
	}
	t.row("route", route)
	for _, m := range x.Misses {
		name := "(any route)"
		if m.Route != "" {
			name = fmt.Sprintf("%s (priority %d)", m.Route, m.Priority)
		}
		t.row("  not", fmt.Sprintf("%s: %s: %s", name, m.Check, m.Detail))
	}
	if l := x.Lookup; l != nil {
		t.row("hash", fmt.Sprintf("%s in the ipv%d table of %d entries, %d active endpoints", l.Hash, l.Family, l.TableSize, l.ActiveEndpoints))
	} else if x.Route != nil {
		t.row("hash", "none: the service does not exist")
	}
	if ep := x.Endpoint; ep != nil {
		t.row("slot", ep.ID)
		t.row("endpoint", fmt.Sprintf("%d %s, ready %s, %d entries (%s)", ep.ID, ep.Address, yesNo(ep.Ready), ep.Entries, percent(ep.Share)))
		t.row("mark", hexMark(x.Mark))
	} else if x.Lookup != nil {
		t.row("endpoint", "none: no ready endpoint of the family")
	}
	t.row("verdict", x.Verdict+" ("+x.Reason+")")
	return t.flush()
}

// WriteText implements Text.
func (l LogLevel) WriteText(w io.Writer) error {
	if l.Previous != "" && l.Previous != l.Level {
		_, err := fmt.Fprintf(w, "log level %s (was %s)\n", l.Level, l.Previous)
		return err
	}
	_, err := fmt.Fprintf(w, "log level %s\n", l.Level)
	return err
}
