package bpfpath

import (
	"errors"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/maglev"
)

// load loads the program for a test (root or CAP_BPF), ending the test as
// require says when it cannot.
func load(tb interface {
	require.TB
	Cleanup(func())
}, opts Options) *Datapath {
	tb.Helper()
	d, err := Load(opts)
	if errors.Is(err, os.ErrPermission) {
		require.Missing(tb, "%v", err)
	}
	if err != nil {
		tb.Fatalf("%+v", err)
	}
	tb.Cleanup(func() { _ = d.Close() })
	return d
}

// differentialTables are the Services the differential test configures:
// table size M, slots N, which are active (every kth), and M = 0 (no
// active slot).
var differentialTables = []struct{ m, n, every int }{
	{7, 3, 1},
	{251, 10, 2},
	{maglev.MinSize, 100, 3},
	{65537, 400, 1},
	{maglev.MinSize, 5, 0},
}

// framesPerService is how many random frames each (table, SCTP rule) pair
// runs.
const framesPerService = 3000

func buildTable(t testing.TB, m, n, every int) *maglev.Table {
	t.Helper()
	active := make([]bool, n)
	for i := range active {
		active[i] = every > 0 && i%every == 0
	}
	tbl, err := maglev.Build(n, active, maglev.WithSize(m))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestIntegrationProgramMatchesDecoder runs random frames (IPv4 with
// options, IPv6; TCP, UDP, SCTP with both hash rules, ICMP and ICMPv6
// echo; fragments, extension headers, ICMP errors, other protocols, non-IP,
// malformed and mutilated frames; to the VIPs, and elsewhere) through the
// program with BPF_PROG_TEST_RUN and checks every result against the
// userspace decoder and flowkey.Hash / Table.Lookup32, for one route to one
// Service with several Maglev tables.
func TestIntegrationProgramMatchesDecoder(t *testing.T) {
	require.Root(t)
	loadStart := time.Now()
	d := load(t, Options{})
	if info, err := d.Program().Info(); err == nil {
		n, _ := info.VerifiedInstructions()
		t.Logf("loaded in %v; the verifier processed %d instructions", time.Since(loadStart).Round(time.Millisecond), n)
	}
	g := frameGen{rand.New(rand.NewPCG(25, 1))}
	statuses := map[Status]int{}
	decidedBy := map[string]int{}
	keyLens := map[uint32]int{} // of decided frames
	start := time.Now()
	runs, refused := 0, 0
	for _, tc := range differentialTables {
		tbl := buildTable(t, tc.m, tc.n, tc.every)
		for _, portsOnly := range []bool{false, true} {
			svc := service{tbl, portsOnly}
			if _, err := d.Configure(oneService(svc)); err != nil {
				t.Fatal(err)
			}
			for range framesPerService {
				gf := g.next()
				got, err := d.Explain(gf.frame)
				if errors.Is(err, ErrFrameSize) {
					// The decoder calls it truncated; the program is not run.
					if _, exact := expect(gf.frame, svc); exact || (gf.want != 0 && gf.want != StatusPuntMalformed) {
						t.Fatalf("%s frame %x: too short to run, yet the decoder or the generator says %v", gf.what, gf.frame, gf.want)
					}
					refused++
					continue
				}
				if err != nil {
					t.Fatalf("%s frame %x: %v", gf.what, gf.frame, err)
				}
				runs++
				statuses[got.Status]++
				if got.Status == StatusDecided {
					decidedBy[gf.what]++
					keyLens[got.KeyLen]++
				}
				want := gf.want
				if want == StatusDecided && tc.every == 0 {
					want = StatusPuntNoEndpoint
				}
				if msg := disagreement(gf.frame, svc, got, want); msg != "" {
					t.Fatalf("M=%d sctpPortsOnly=%v, %s frame %x: %s", tc.m, portsOnly, gf.what, gf.frame, msg)
				}
			}
		}
	}
	t.Logf("%d frames run in %v (%d more too short to run); statuses %v; decided %v, by key length %v",
		runs, time.Since(start).Round(time.Millisecond), refused, statuses, decidedBy, keyLens)
	// Every key layout was decided: IPv4 and IPv6 five-tuples and echoes,
	// and SCTP on its ports only.
	for _, n := range []uint32{8, 16, 20, 40, 44} {
		if keyLens[n] == 0 {
			t.Errorf("no frame decided with a key of %d bytes", n)
		}
	}
	// Every status the generator aims at occurred, so no branch of the
	// parser went untested (the routes' statuses are the business of
	// dataplane's TestIntegrationBPFPathMatchesEngine).
	for _, s := range []Status{StatusDecided, StatusPuntNotIP, StatusPuntMalformed, StatusPuntFragment, StatusPuntIPv6Extension,
		StatusPuntProtocol, StatusPuntICMPError, StatusPuntNoEndpoint, StatusPuntNotVIP} {
		if statuses[s] == 0 {
			t.Errorf("no frame ended %v", s)
		}
	}
}
