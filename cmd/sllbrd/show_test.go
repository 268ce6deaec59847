package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/bgp"
	"github.com/sllbrd/sllbrd/dataplane"
	"github.com/sllbrd/sllbrd/internal/admin"
	"github.com/sllbrd/sllbrd/internal/harness/testpkt"
	"github.com/sllbrd/sllbrd/internal/liveness"
	"github.com/sllbrd/sllbrd/kube/manifest"
	"github.com/sllbrd/sllbrd/kube/translate"
	"github.com/sllbrd/sllbrd/model"
)

var update = flag.Bool("update", false, "rewrite testdata/admin/* from the current output")

// goldenClock is the test daemon's clock.
var goldenClock = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// goldenState is the configuration of the golden tests: routes with every
// kind of match, a dual-stack Service with an endpoint not ready and the
// default liveness checks, an IPv4-only Service without, a Service no route
// uses whose liveness checks find an endpoint dead (goldenLiveness), and a
// route to a Service that does not exist.
func goldenState() *model.State {
	vips := []netip.Prefix{netip.MustParsePrefix("20.0.0.1/32"), netip.MustParsePrefix("2001:db8::1/128")}
	ep := func(id int, a string, ready bool) model.Endpoint {
		return model.Endpoint{ID: id, Addr: netip.MustParseAddr(a), Ready: ready}
	}
	return &model.State{
		Generation: 3,
		Routes: []model.Route{
			{Name: "default/web", Service: "service-a", Priority: 10, Destinations: vips,
				Protocols:        []model.Protocol{model.ProtoTCP, model.ProtoUDP},
				DestinationPorts: []model.PortRange{{From: 80, To: 80}, {From: 443, To: 443}, {From: 5000, To: 5010}}},
			{Name: "default/syn-only", Service: "service-b", Priority: 20, Destinations: vips,
				Sources:          []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/64")},
				Protocols:        []model.Protocol{model.ProtoTCP},
				DestinationPorts: []model.PortRange{{From: 8080, To: 8080}},
				ByteMatches:      []model.ByteMatch{{Protocol: model.ProtoTCP, Offset: 13, Size: 1, Mask: 0x02, Value: 0x02}}},
			{Name: "default/gtp", Service: "service-a", Priority: 30, Destinations: vips[:1],
				Protocols: []model.Protocol{model.ProtoUDP}, DestinationPorts: []model.PortRange{{From: 2152, To: 2152}},
				ByteMatches: []model.ByteMatch{{Protocol: model.ProtoUDP, Offset: 8, Size: 1, Mask: 0xff, Value: 0x30}}},
			{Name: "default/dns", Service: "service-b", Priority: 5, Destinations: vips,
				Protocols: []model.Protocol{model.ProtoUDP}, DestinationPorts: []model.PortRange{{From: 53, To: 53}},
				SourcePorts: []model.PortRange{{From: 1024, To: 65535}}},
			{Name: "default/orphan", Service: "service-gone", Priority: 1,
				Destinations: []netip.Prefix{netip.MustParsePrefix("20.0.0.2/32")}, Protocols: []model.Protocol{model.ProtoTCP}},
		},
		Services: []model.Service{
			{Name: "service-a", MaxEndpoints: 4, SCTPHashPorts: true, Liveness: defaultLiveness, Endpoints: []model.Endpoint{
				ep(0, "169.254.100.10", true), ep(0, "fd00:100::10", true),
				ep(1, "169.254.100.11", true), ep(1, "fd00:100::11", true),
				ep(2, "169.254.100.12", false),
			}},
			{Name: "service-b", MaxEndpoints: 2, Endpoints: []model.Endpoint{ep(1, "169.254.100.21", true)}},
			{Name: "service-c", MaxEndpoints: 2, Liveness: model.Liveness{Interval: 100 * time.Millisecond, Multiplier: 3},
				Endpoints: []model.Endpoint{ep(0, "169.254.100.31", true), ep(1, "169.254.100.32", true)}},
		},
	}
}

// defaultLiveness is the liveness configuration of a Service without the
// annotation.
var defaultLiveness = model.Liveness{Interval: 200 * time.Millisecond, Multiplier: 4, HoldDown: 5 * time.Second}

// goldenLiveness is what the golden daemon's liveness checks found: every
// probed address alive but 169.254.100.31, dead for 2 s (the engine
// programs it not ready); one address not answered yet.
func goldenLiveness() livenessView {
	services, probed, _ := livenessTargets(goldenState())
	at := func(ago time.Duration) time.Time { return goldenClock.Add(-ago) }
	state := func(a string, alive bool, since time.Duration, transitions uint64, reply time.Duration, rtt time.Duration) liveness.State {
		s := liveness.State{Addr: netip.MustParseAddr(a), Alive: alive, Since: at(since), Transitions: transitions, RTT: rtt}
		if reply > 0 {
			s.LastReply = at(reply)
		}
		return s
	}
	states := map[netip.Addr]liveness.State{}
	for _, s := range []liveness.State{
		state("169.254.100.10", true, time.Hour, 0, 150*time.Millisecond, 213*time.Microsecond),
		state("fd00:100::10", true, time.Hour, 0, 50*time.Millisecond, 187*time.Microsecond),
		state("169.254.100.11", true, 42*time.Second, 2, 10*time.Millisecond, 1250*time.Microsecond),
		state("fd00:100::11", true, 120*time.Millisecond, 0, 0, 0),
		state("169.254.100.31", false, 2*time.Second, 1, 2400*time.Millisecond, 301*time.Microsecond),
		state("169.254.100.32", true, time.Hour, 0, 40*time.Millisecond, 95*time.Microsecond),
	} {
		states[s.Addr] = s
	}
	return livenessView{services: services, probed: probed, states: states}
}

// goldenDead is the dead set of goldenLiveness.
var goldenDead = map[netip.Addr]bool{netip.MustParseAddr("169.254.100.31"): true}

// goldenDaemon builds the daemon state the admin socket reports on, in
// process with fakes for BGP and BFD, lets each change apply to the backend,
// and serves it on a socket.
func goldenDaemon(t *testing.T, changes ...func(*adminBackend)) (socket string, b *adminBackend) {
	t.Helper()
	engine := dataplane.NewEngine()
	plan, err := engine.Build(withoutDead(goldenState(), goldenDead))
	if err != nil {
		t.Fatal(err)
	}
	engine.Commit(plan)
	decideGoldenTraffic(engine)
	status := newConfigStatus(func() time.Time { return goldenClock.Add(-2 * time.Second) })
	status.observeSource(manifest.Update{Problems: []translate.Problem{{Kind: translate.KindL34Route, Namespace: "default",
		Name: "broken", Field: "spec.priority", Message: "must be at least 1"}}})
	status.observeApply(dataplane.Applied{Generation: 3, Problems: plan.Problems}, nil)
	level := new(slog.LevelVar)
	b = &adminBackend{engine: engine, status: status, ready: func() (bool, []string) { return true, nil },
		gateway: "sllb-a", source: admin.Source{Kind: "file", Path: "/etc/sllbrd/manifests"},
		queues: 2, holdLimit: 1024, copyRange: 256, level: level, log: slog.New(slog.DiscardHandler),
		now: func() time.Time { return goldenClock }, bgp: fakeBGP, bfd: fakeBFD, liveness: goldenLiveness}
	for _, c := range changes {
		c(b)
	}
	socket = filepath.Join(t.TempDir(), "admin.sock")
	srv, err := admin.Listen(socket, b, admin.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return socket, b
}

// decideGoldenTraffic decides a fixed set of packets, so the counters
// shown are known: ten TCP flows to the web route over both families, a
// DNS query, and a later fragment held waiting for its first fragment.
func decideGoldenTraffic(e *dataplane.Engine) {
	d := dataplane.NewDecision()
	for i := range 10 {
		f := testpkt.Flow{Src: netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), Dst: netip.MustParseAddr("20.0.0.1"), Proto: 6, SrcPort: uint16(40000 + i), DstPort: 80}
		if i%2 == 1 {
			f.Src, f.Dst = netip.AddrFrom16([16]byte{0xfd, 15: byte(i + 1)}), netip.MustParseAddr("2001:db8::1")
		}
		b := testpkt.Packet(f, nil, testpkt.Options{})
		e.Decide(b, len(b), 0, d)
	}
	dns := testpkt.Packet(testpkt.Flow{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("20.0.0.1"), Proto: 17, SrcPort: 5353, DstPort: 53}, nil, testpkt.Options{})
	e.Decide(dns, len(dns), 0, d)
	frags := testpkt.Fragments(testpkt.Flow{Src: netip.MustParseAddr("10.0.0.9"), Dst: netip.MustParseAddr("20.0.0.1"), Proto: 17, SrcPort: 3333, DstPort: 5000}, make([]byte, 3000), 1200, 5)
	e.Decide(frags[1], len(frags[1]), 1, d)
}

func fakeBGP(context.Context) ([]bgp.PeerStats, error) {
	return []bgp.PeerStats{
		{Router: "gw-a", Peer: netip.MustParseAddr("192.0.2.254"), State: bgp.StateEstablished, Uptime: time.Hour + 2*time.Minute + 3*time.Second,
			Announced: 2, Received: 1, Accepted: 1, Flaps: 1, LastDownReason: "hold timer expired"},
		{Router: "gw-b", Peer: netip.MustParseAddr("2001:db8:ff::fe"), State: bgp.StateActive, AdminDown: true},
	}, nil
}

func fakeBFD() []bfd.Stats {
	up := bfd.Stats{Key: bfd.Key{Peer: netip.MustParseAddr("192.0.2.254"), Interface: "vlan-100"}}
	up.State, up.RemoteState, up.TxInterval, up.DetectionTime, up.RemoteDetectMult = bfd.StateUp, bfd.StateUp, 300*time.Millisecond, 900*time.Millisecond, 3
	up.UpTransitions = 1
	down := bfd.Stats{Key: bfd.Key{Peer: netip.MustParseAddr("2001:db8:ff::fe"), Multihop: true}, SocketError: "network is unreachable"}
	down.State, down.RemoteState, down.LocalDiag, down.TxInterval = bfd.StateDown, bfd.StateDown, bfd.DiagControlDetectExpired, time.Second
	down.UpTransitions, down.DownTransitions = 2, 2
	return []bfd.Stats{down, up} // in no order, as bfd.Server.AllStats
}

// goldenCases are the commands of the golden files, run in this order
// (log-level changes the state the next one reads).
var goldenCases = []struct {
	name string
	args []string
}{
	{"show-routes", []string{"show", "routes"}},
	{"show-services", []string{"show", "services"}},
	{"show-endpoints", []string{"show", "endpoints"}},
	{"show-sessions", []string{"show", "sessions"}},
	{"show-fragments", []string{"show", "fragments"}},
	{"show-config", []string{"show", "config"}},
	{"explain-balanced", []string{"explain", "tcp", "10.0.0.1:40000", "20.0.0.1:80"}},
	{"explain-no-endpoint-of-family", []string{"explain", "udp", "[fd00::1]:1234", "[2001:db8::1]:53"}},
	{"explain-no-destination", []string{"explain", "tcp", "10.0.0.1:1234", "20.0.0.9:80"}},
	{"explain-echo", []string{"explain", "icmp", "10.0.0.7:7", "20.0.0.1"}},
	{"explain-missing-service", []string{"explain", "tcp", "10.0.0.1:1234", "20.0.0.2:22"}},
	{"explain-byte-match-fails", []string{"explain", "udp", "10.0.0.1:2152", "20.0.0.1:2152"}},
	{"explain-byte-match-holds", []string{"explain", "--payload", "30ff0001", "udp", "10.0.0.1:2152", "20.0.0.1:2152"}},
	{"log-level", []string{"log-level"}},
	{"log-level-debug", []string{"log-level", "debug"}},
}

// TestGoldenOutput runs every client command against the golden daemon,
// as text and as JSON, and compares with testdata/admin (rewrite them
// with go test ./cmd/sllbrd -run TestGoldenOutput -update).
func TestGoldenOutput(t *testing.T) {
	socket, _ := goldenDaemon(t)
	for _, tc := range goldenCases {
		for _, output := range []string{"text", "json"} {
			args := append(slices.Clone(tc.args[1:]), "--admin-socket", socket, "-o", output)
			if tc.args[0] == "log-level" && output == "json" {
				continue // log-level changes state: its text run is its test
			}
			var stdout, stderr bytes.Buffer
			if code := clientMain(tc.args[0], args, &stdout, &stderr); code != 0 {
				t.Fatalf("%s -o %s: exit %d: %s", tc.name, output, code, stderr.String())
			}
			ext := map[string]string{"text": ".txt", "json": ".json"}[output]
			checkGolden(t, filepath.Join("testdata", "admin", tc.name+ext), stdout.Bytes())
		}
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (rewrite with -update if the change is intended):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestLogLevelChangesTheDaemonsLogger: after `sllbrd log-level debug` the
// daemon's logger writes debug records it dropped before.
func TestLogLevelChangesTheDaemonsLogger(t *testing.T) {
	var logs bytes.Buffer
	var log *slog.Logger
	socket, b := goldenDaemon(t, func(b *adminBackend) {
		b.level.Set(slog.LevelInfo)
		log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: b.level}))
		b.log = log
	})
	log.Debug("before")
	var out, errOut bytes.Buffer
	if code := clientMain("log-level", []string{"debug", "--admin-socket", socket}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	log.Debug("after")
	if got := logs.String(); strings.Contains(got, "before") || !strings.Contains(got, "msg=after") ||
		!strings.Contains(got, `msg="log level changed" level=DEBUG was=INFO`) {
		t.Fatalf("logs:\n%s", got)
	}
	if code := clientMain("log-level", []string{"warn", "--admin-socket", socket}, &out, &errOut); code != 0 || b.level.Level() != slog.LevelWarn {
		t.Fatalf("log-level warn: exit %d, level %v: %s", code, b.level.Level(), errOut.String())
	}
}

func TestClientUsageErrors(t *testing.T) {
	socket, _ := goldenDaemon(t)
	for _, tc := range []struct {
		command string
		args    []string
		code    int
		want    string
	}{
		{"show", []string{"everything"}, 2, "want one of routes, services"},
		{"show", []string{"routes", "-o", "yaml"}, 2, `-o "yaml": want text or json`},
		{"explain", []string{"gre", "10.0.0.1", "20.0.0.1"}, 2, `protocol "gre"`},
		{"explain", []string{"tcp", "10.0.0.1"}, 2, "got 2 arguments"},
		{"explain", []string{"tcp", "10.0.0.1", "20.0.0.1:99999"}, 2, "destination"},
		{"explain", []string{"--payload", "xyz", "udp", "10.0.0.1", "20.0.0.1"}, 2, "not hexadecimal"},
		{"explain", []string{"tcp", "10.0.0.1", "2001:db8::1"}, 1, "different address families"}, // the daemon says
		{"explain", []string{"icmp", "10.0.0.1", "20.0.0.1:80"}, 1, "the destination has no port"},
		{"log-level", []string{"loud"}, 2, `log level "loud"`},
		{"show", []string{"routes", "--admin-socket", socket + ".absent"}, 1, "is sllbrd running"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"--admin-socket", socket}, tc.args...)
		if code := clientMain(tc.command, args, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%s %v: exit %d, stderr %q; want exit %d saying %q", tc.command, tc.args, code, errOut.String(), tc.code, tc.want)
		}
	}
}

// TestConfigReportsFailures: a failed apply and an unusable source show
// in show config, with the last good generation kept.
func TestConfigReportsFailures(t *testing.T) {
	socket, _ := goldenDaemon(t, func(b *adminBackend) {
		b.status.observeApply(dataplane.Applied{Generation: 4}, errors.New("policy routes: netlink: operation not permitted"))
		b.status.observeSource(manifest.Update{Err: errors.New("manifest routes.yaml: line 3: mapping values are not allowed here")})
		b.ready = func() (bool, []string) {
			return false, []string{"configuration generation 4 not programmed (attempt 2): dataplane: policy routes: netlink: operation not permitted"}
		}
	})
	var out, errOut bytes.Buffer
	if code := clientMain("show", []string{"config", "--admin-socket", socket}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	checkGolden(t, filepath.Join("testdata", "admin", "show-config-failing.txt"), out.Bytes())
}

// TestOperationsDocQuotesGoldenOutput keeps the examples of
// docs/operations.md true: each is a golden file as it is now.
func TestOperationsDocQuotesGoldenOutput(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"show-routes.txt", "show-services.txt", "show-sessions.txt", "show-fragments.txt",
		"show-config.txt", "show-config-failing.txt", "explain-balanced.txt", "explain-byte-match-fails.txt",
		"explain-byte-match-holds.txt", "explain-no-endpoint-of-family.txt", "explain-no-destination.txt",
		"explain-no-endpoint-of-family.json"} {
		golden, err := os.ReadFile(filepath.Join("testdata", "admin", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(doc, golden) {
			t.Errorf("docs/operations.md does not quote testdata/admin/%s as it is: copy it there", name)
		}
	}
}
