package lab

import (
	"context"
	"testing"
	"time"
)

// TestIntegrationStreamsFixedPorts: streams with SrcPortBase use exactly
// those source ports, both families, and can be opened again on the same
// ports at once after Close (closed with a reset: no TIME_WAIT), reaching
// the same targets (the same flows through the same ECMP paths).
func TestIntegrationStreamsFixedPorts(t *testing.T) {
	const echoPort = 7000
	l := newTestLab(t, Options{LBs: 1, Targets: 3, EchoPorts: []uint16{echoPort}})
	ctx := context.Background()
	if err := l.Baseline(ctx, BaselineOptions{ECMP: true}); err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		var first map[Flow]string
		for run := range 2 {
			s, err := l.OpenStreams(ctx, StreamOptions{VIP: fam.vip, Port: echoPort, Count: 8, SrcPortBase: 24000, Interval: 10 * time.Millisecond})
			if err != nil {
				t.Fatalf("%s, run %d: %v", fam.name, run, err)
			}
			time.Sleep(100 * time.Millisecond)
			got := map[Flow]string{}
			for i, st := range s.Close() {
				if st.Flow.Src.Port() != 24000+uint16(i) || st.Err != nil || st.Exchanges == 0 {
					t.Errorf("%s, run %d: connection %d: %s to %s, %d exchanges, %v; want source port %d, exchanges, no error",
						fam.name, run, i, st.Flow, st.Target, st.Exchanges, st.Err, 24000+i)
				}
				got[st.Flow] = st.Target
			}
			if run == 0 {
				first = got
				continue
			}
			for f, to := range got {
				if first[f] != to {
					t.Errorf("%s: %s reached %s, then %s", fam.name, f, first[f], to)
				}
			}
		}
		t.Logf("%s: 8 streams from ports 24000-24007, twice: %v", fam.name, Distribution(first))
	}
}
