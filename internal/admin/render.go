package admin

import (
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Text is a result that writes itself for people: aligned columns, one
// object per line. Every result type implements it.
type Text interface {
	WriteText(w io.Writer) error
}

// table writes aligned columns; its error is the first write's.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

func (t *table) row(cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, c)
	}
	fmt.Fprint(t.tw, "\n")
}

func (t *table) flush() error { return t.tw.Flush() }

// WriteText implements Text.
func (r Routes) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "generation %d: %d routes in precedence order (the first that matches wins)\n", r.Generation, len(r.Routes))
	t := newTable(w)
	t.row("#", "NAME", "PRIORITY", "SERVICE", "PACKETS", "BYTES", "MATCH")
	for i, rt := range r.Routes {
		svc := rt.Service
		if !rt.ServiceFound {
			svc += " (missing: dropped)"
		}
		t.row(i, rt.Name, rt.Priority, svc, rt.Packets, rt.Bytes, rt.match())
	}
	return t.flush()
}

// match writes what the route matches in one line.
func (r Route) match() string {
	parts := []string{"dst " + joinAddrs(r.Destinations), "proto " + strings.Join(r.Protocols, ",")}
	if len(r.DestinationPorts) > 0 {
		parts = append(parts, "dport "+strings.Join(r.DestinationPorts, ","))
	}
	if len(r.Sources) > 0 {
		src := make([]string, len(r.Sources))
		for i, p := range r.Sources {
			src[i] = p.String()
		}
		parts = append(parts, "src "+strings.Join(src, ","))
	}
	if len(r.SourcePorts) > 0 {
		parts = append(parts, "sport "+strings.Join(r.SourcePorts, ","))
	}
	for _, m := range r.ByteMatches {
		parts = append(parts, "bytes "+strings.ReplaceAll(m, " ", ""))
	}
	return strings.Join(parts, " ")
}

func joinAddrs(as []netip.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}

// WriteText implements Text.
func (s Services) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "generation %d: %d services\n", s.Generation, len(s.Services))
	for _, svc := range s.Services {
		hash := "sctp hashed on addresses and ports"
		if svc.SCTPHashPorts {
			hash = "sctp hashed on ports"
		}
		fmt.Fprintf(w, "\n%s: %d identifiers; ipv4 table %d entries, %d active; ipv6 table %d entries, %d active; %s; %s\n",
			svc.Name, svc.MaxEndpoints, svc.IPv4.Size, svc.IPv4.ActiveEndpoints, svc.IPv6.Size, svc.IPv6.ActiveEndpoints, hash,
			svc.Liveness.describe())
		if len(svc.Endpoints) == 0 {
			fmt.Fprintln(w, "  no endpoints")
			continue
		}
		if err := writeEndpoints(w, svc.Endpoints, false); err != nil {
			return err
		}
	}
	return nil
}

// WriteText implements Text.
func (e Endpoints) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "generation %d: %d endpoints\n", e.Generation, len(e.Endpoints))
	return writeEndpoints(w, e.Endpoints, true)
}

// writeEndpoints writes one line per endpoint address.
func writeEndpoints(w io.Writer, eps []Endpoint, withService bool) error {
	t := newTable(w)
	head := []any{"ID", "MARK", "FAMILY", "ADDRESS", "READY", "ENTRIES", "SHARE", "PACKETS", "BYTES", "LIVENESS", "RTT"}
	indent := "  "
	if withService {
		head, indent = append([]any{"SERVICE"}, head...), ""
	}
	head[0] = indent + head[0].(string)
	t.row(head...)
	for _, ep := range eps {
		for _, f := range []struct {
			name string
			a    *EndpointAddress
		}{{"ipv4", ep.IPv4}, {"ipv6", ep.IPv6}} {
			if f.a == nil {
				continue
			}
			cells := []any{ep.ID, hexMark(ep.Mark), f.name, f.a.Address, yesNo(f.a.Ready), f.a.Entries, percent(f.a.Share), f.a.Packets, f.a.Bytes}
			cells = append(cells, f.a.Liveness.cells()...)
			if withService {
				cells = append([]any{ep.Service}, cells...)
			}
			cells[0] = indent + fmt.Sprint(cells[0])
			t.row(cells...)
		}
	}
	return t.flush()
}

// describe writes the configuration as the Service line shows it.
func (l ServiceLiveness) describe() string {
	if !l.On {
		return "liveness off"
	}
	back := "back at the first reply"
	if l.Probe == "bfd" {
		back = "back once its session is Up"
	}
	if l.HoldDownSeconds > 0 {
		back = "back after answering for " + seconds(l.HoldDownSeconds)
	}
	by := ""
	if l.Probe != "" {
		by = " by " + l.Probe
	}
	return fmt.Sprintf("liveness probed%s every %s, dead after %d missed (%s), %s", by, seconds(l.IntervalSeconds),
		l.Multiplier, seconds(l.DetectionSeconds), back)
}

// cells writes the LIVENESS and RTT columns: the probe and the state, as
// "icmp alive 1m2s" or "bfd dead 3.2s" (how long in that state), and the
// last round-trip time, "-" when not probed, no echo reply yet, or probed
// by BFD (which has none).
func (l *AddressLiveness) cells() []any {
	if l == nil {
		return []any{"-", "-"}
	}
	state := "dead "
	if l.Alive {
		state = "alive "
	}
	if l.Probe != "" {
		state = l.Probe + " " + state
	}
	since := "0s"
	if l.SinceSeconds > 0 {
		since = seconds(l.SinceSeconds)
	}
	rtt := "-"
	if !l.LastReply.IsZero() {
		rtt = strconv.FormatFloat(1000*l.RTTSeconds, 'f', 3, 64) + "ms"
	}
	return []any{state + since, rtt}
}

func hexMark(m uint32) string { return "0x" + strconv.FormatUint(uint64(m), 16) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func percent(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }

// seconds writes a duration given in seconds, rounded for people.
func seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d == 0:
		return "-"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Every result writes itself for people.
var _ = []Text{Routes{}, Services{}, Endpoints{}, Sessions{}, Fragments{}, Config{}, Explanation{}, LogLevel{}}
