package bpfpath

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// FuzzProgramAgreesWithDecoder runs arbitrary frames through the program
// (BPF_PROG_TEST_RUN) and checks its result against the userspace decoder
// and flowkey (expect): a decided frame must hash and pick the entry and
// slot the userspace path picks, and the program may punt only what
// doc.go lists. One program is loaded per fuzz process.
func FuzzProgramAgreesWithDecoder(f *testing.F) {
	require.Root(f)
	d := load(f, Options{})
	tables := map[bool]service{}
	for _, portsOnly := range []bool{false, true} {
		tables[portsOnly] = service{buildTable(f, 251, 10, 2), portsOnly}
	}
	g := frameGen{rand.New(rand.NewPCG(25, 2))}
	for i := range 200 {
		f.Add(g.next().frame, i%2 == 0)
	}
	configured, first := false, true
	f.Fuzz(func(t *testing.T, frame []byte, portsOnly bool) {
		svc := tables[portsOnly]
		if first || configured != portsOnly {
			if _, err := d.Configure(oneService(svc)); err != nil {
				t.Fatal(err)
			}
			configured, first = portsOnly, false
		}
		// Longer frames say nothing more about headers, and some kernels
		// refuse to run them.
		frame = frame[:min(len(frame), testRunFrameMax)]
		got, err := d.Explain(frame)
		if errors.Is(err, ErrFrameSize) {
			if len(frame) >= 14 {
				if _, exact := expect(frame, svc); exact {
					t.Fatalf("frame %x: too short to run, yet the decoder decodes it", frame)
				}
			}
			return
		}
		if err != nil {
			t.Fatalf("frame %x: %v", frame, err)
		}
		if msg := disagreement(frame, svc, got, 0); msg != "" {
			t.Fatalf("sctpPortsOnly=%v, frame %x: %s", portsOnly, frame, msg)
		}
	})
}
