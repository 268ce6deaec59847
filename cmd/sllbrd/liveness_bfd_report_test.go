package main

import (
	"bytes"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/admin"
	"github.com/sllbrd/sllbrd/internal/liveness"
	"github.com/sllbrd/sllbrd/internal/metrics"
	"github.com/sllbrd/sllbrd/model"
)

// TestUnionDead: an address is dead when either probe finds it dead.
func TestUnionDead(t *testing.T) {
	a, b, c := bfdAddrA, bfdAddrB, netip.MustParseAddr("169.111.100.13")
	got := unionDead(map[netip.Addr]bool{a: true}, map[netip.Addr]bool{b: true, c: false})
	if want := map[netip.Addr]bool{a: true, b: true}; !maps.Equal(got, want) {
		t.Errorf("union %v, want %v", got, want)
	}
	if got := unionDead(nil, map[netip.Addr]bool{a: true}); !maps.Equal(got, map[netip.Addr]bool{a: true}) {
		t.Errorf("union with no ICMP set: %v", got)
	}
}

// bfdState has service-a probed by ICMP (bfdAddrA, identifier 0) and
// service-d by BFD (bfdAddrA, identifier 1, and bfdAddrB, identifier 0).
func bfdState() *model.State {
	bfdProbe := defaultLiveness
	bfdProbe.Probe = model.ProbeBFD
	return &model.State{Generation: 1, Services: []model.Service{
		{Name: "service-a", MaxEndpoints: 2, Liveness: defaultLiveness, Endpoints: []model.Endpoint{{ID: 0, Addr: bfdAddrA, Ready: true}}},
		{Name: "service-d", MaxEndpoints: 2, Liveness: bfdProbe,
			Endpoints: []model.Endpoint{{ID: 1, Addr: bfdAddrA, Ready: true}, {ID: 0, Addr: bfdAddrB, Ready: true}}},
	}}
}

// TestEndpointLivenessBFD: the BFD sessions' transitions go to the loop
// with the prober's dead set (union), are counted, and are reported for
// the endpoints of the Services probed by BFD only; metrics and show say
// which probe, with no round-trip time for BFD.
func TestEndpointLivenessBFD(t *testing.T) {
	clock := &fakeClock{t: goldenClock}
	var dead []map[netip.Addr]bool
	e := &endpointLiveness{log: slog.New(slog.DiscardHandler), prober: &liveness.Prober{},
		setDead: func(d map[netip.Addr]bool) { dead = append(dead, d) }, events: newLivenessEvents("sllbrd-x", clock.now, nil)}
	e.bfd = newBFDLiveness(e.log, clock.now, e.bfdChanged)
	srv := newFakeBFDServer()
	bind(e.bfd, srv)
	st := bfdState()
	services, probed, targets := livenessTargets(st) // what setState gives the BFD sessions
	e.services, e.probed = services, probed
	e.bfd.set(targets.bfd, st.Routers, st.Gateway.Networks)
	if len(srv.sessions) != 2 {
		t.Fatalf("sessions %v, want one per address of service-d", srv.sessions)
	}
	clock.advance(time.Second)
	srv.event(bfdAddrA, toUp)
	srv.event(bfdAddrB, toUp)
	srv.event(bfdAddrA, upToDown)
	if len(dead) != 1 || !maps.Equal(dead[0], map[netip.Addr]bool{bfdAddrA: true}) {
		t.Fatalf("dead sets %v, want one with the address", dead)
	}
	evs := drain(e.events)
	if len(evs) != 1 || evs[0].service != "service-d" || evs[0].reason != reasonEndpointDead || !strings.Contains(evs[0].note, "identifier 1") {
		t.Fatalf("events %+v, want service-d's EndpointDead only (service-a probes it by ICMP)", evs)
	}
	e.changed([]liveness.Change{{Addr: bfdAddrB, Alive: false}}) // an ICMP change of an address only BFD probes
	if evs := drain(e.events); len(evs) != 0 {
		t.Errorf("an ICMP change reported for a Service probed by BFD: %+v", evs)
	}
	if !maps.Equal(dead[len(dead)-1], map[netip.Addr]bool{bfdAddrA: true}) {
		t.Errorf("dead set %v after the prober's change, want the BFD dead address kept", dead[len(dead)-1])
	}

	want := []metrics.LivenessEndpoint{
		{Service: "service-d", ID: 0, Address: bfdAddrB, Alive: true, Probe: "bfd"},
		{Service: "service-d", ID: 1, Address: bfdAddrA, Alive: false, Probe: "bfd"},
	}
	// service-a's address has no prober state here: the prober runs nothing.
	if got := e.LivenessEndpoints(); !slices.Equal(got, want) {
		t.Errorf("metrics endpoints %+v, want %+v", got, want)
	}
	if n := e.LivenessCounts(); n.Alive != 1 || n.Dead != 1 || n.Down != 2 || n.BFD.SessionDown != 1 {
		t.Errorf("counts %+v, want 1 alive, 1 dead, 2 down transitions (one ICMP), 1 BFD session down", n)
	}
	v := e.view()
	a := addressLiveness(v, "service-d", bfdAddrA, clock.now().Add(2*time.Second))
	if a == nil || a.Probe != "bfd" || a.Alive || a.Transitions != 1 || a.SinceSeconds != 2 || !a.LastReply.IsZero() || a.RTTSeconds != 0 {
		t.Fatalf("show: %+v, want bfd, dead for 2 s, no reply time", a)
	}
	if a := addressLiveness(v, "service-a", bfdAddrA, clock.now()); a != nil {
		t.Errorf("show: service-a's address (probed by ICMP) shows the BFD state %+v", a)
	}
	var out bytes.Buffer
	svc := admin.Service{Name: "service-d", Liveness: serviceLiveness(services["service-d"]),
		Endpoints: []admin.Endpoint{{Service: "service-d", ID: 1, IPv4: &admin.EndpointAddress{Address: bfdAddrA, Liveness: a}}}}
	if err := (admin.Services{Services: []admin.Service{svc}}).WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"liveness probed by bfd every 200ms", "bfd dead 2s  -"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("show services does not say %q:\n%s", s, out.String())
		}
	}
}

// TestBFDEventNotes: the notes of BFD transitions say BFD, and why.
func TestBFDEventNotes(t *testing.T) {
	r := newLivenessEvents("sllbrd-x", (&fakeClock{t: goldenClock}).now, nil)
	cfg := defaultLiveness
	cfg.Probe = model.ProbeBFD
	rep := func(alive bool, cause bfdCause, diag bfd.Diag, took time.Duration) livenessReport {
		return livenessReport{change: liveness.Change{Addr: bfdAddrA, Alive: alive, Detection: took}, service: "service-d", id: 1,
			config: cfg, cause: cause, diag: diag}
	}
	for _, tc := range []struct {
		rep  livenessReport
		want []string
	}{
		{rep(false, bfdNeverUp, 0, 3800*time.Millisecond), []string{"no BFD session came up with the target side in 3.8s", "probe=bfd", "UDP 3784"}},
		{rep(false, bfdSessionDown, bfd.DiagControlDetectExpired, 0), []string{"its BFD session went down (Control Detection Time Expired)"}},
		{rep(true, 0, 0, 5*time.Second), []string{"its BFD session has been Up for 5s"}},
	} {
		ev := r.event(tc.rep)
		if ev.warning == tc.rep.change.Alive {
			t.Errorf("%+v: warning %v", tc.rep, ev.warning)
		}
		for _, s := range append(tc.want, "SLLBR sllbrd-x: endpoint 169.111.100.11 (identifier 1)") {
			if !strings.Contains(ev.note, s) {
				t.Errorf("note %q lacks %q", ev.note, s)
			}
		}
	}
}
