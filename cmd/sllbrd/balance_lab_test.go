package main

import (
	"fmt"
	"maps"
	"net/netip"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// TestIntegrationFlowsSpreadAndStick: UDP and TCP flows over IPv4 and IPv6
// reach all targets, evenly within a bound, and a repeated flow reaches the
// same target.
func TestIntegrationFlowsSpreadAndStick(t *testing.T) {
	forEachDataplane(t, testIntegrationFlowsSpreadAndStick)
}

func testIntegrationFlowsSpreadAndStick(t *testing.T, mode string) {
	l := dataplaneLab(t, 1, mode)
	startSllbrd(t, l, allTargets, webRoute, 1)
	const n = 300
	for _, vip := range []netip.Addr{vip4, vip6} {
		for _, proto := range []string{"udp", "tcp"} {
			t.Run(fmt.Sprintf("%s/%v", proto, vip), func(t *testing.T) {
				o := lab.FlowOptions{VIP: vip, Port: 5000, Proto: proto, Count: n}
				first := flows(t, l, o)
				dist := lab.Distribution(first)
				t.Logf("distribution of %d flows: %v", n, dist)
				if len(dist) != 3 {
					t.Fatalf("flows reached %d targets, want 3: %v", len(dist), dist)
				}
				for target, c := range dist {
					// Even share is 100; 3 standard deviations is about +-25.
					if c < n/5 || c > n*47/100 {
						t.Errorf("%s got %d of %d flows, outside [%d, %d]", target, c, n, n/5, n*47/100)
					}
				}
				if again := flows(t, l, o); !maps.Equal(first, again) {
					t.Errorf("repeated flows reached other targets: %d of %d differ", differing(first, again), n)
				}
			})
		}
	}
}

// TestIntegrationEndpointChangesMoveOnlyTheirFlows: un-readying an endpoint,
// then removing it, moves only the flows it served.
func TestIntegrationEndpointChangesMoveOnlyTheirFlows(t *testing.T) {
	forEachDataplane(t, testIntegrationEndpointChangesMoveOnlyTheirFlows)
}

func testIntegrationEndpointChangesMoveOnlyTheirFlows(t *testing.T, mode string) {
	l := dataplaneLab(t, 1, mode)
	dir, insts := startSllbrd(t, l, allTargets, webRoute, 1)
	opts := []lab.FlowOptions{{VIP: vip4, Port: 5001, Count: 200}, {VIP: vip6, Port: 5001, Count: 200}}
	var before []map[lab.Flow]string
	for _, o := range opts {
		before = append(before, flows(t, l, o))
	}
	steps := []struct {
		name     string
		services []e2e.Service
	}{
		{"t2 not ready", []e2e.Service{{Name: "service-a", Targets: []int{1, 2, 3}, Ready: map[int]bool{2: false}}}},
		// Removing t2 keeps t3's identifier (2): only t2's flows move.
		{"t2 removed", nil},
	}
	for gen, step := range steps {
		if step.services == nil {
			if err := writeWithout(dir, 2); err != nil {
				t.Fatal(err)
			}
		} else if err := e2e.WriteManifests(dir, step.services, webRoute); err != nil {
			t.Fatal(err)
		}
		waitGeneration(t, insts[0], uint64(gen+2))
		for i, o := range opts {
			after := flows(t, l, o)
			for f, was := range before[i] {
				now := after[f]
				switch {
				case now == "t2":
					t.Errorf("%s: flow %v still reaches t2", step.name, f)
				case was != "t2" && now != was:
					t.Errorf("%s: flow %v moved from %s to %s, but only t2's flows may move", step.name, f, was, now)
				}
			}
			t.Logf("%s, %v: %d of %d flows were on t2 and moved", step.name, o.VIP, lab.Distribution(before[i])["t2"], len(after))
		}
	}
}

// writeWithout rewrites the manifests with target t2's endpoints deleted
// while the others keep their identifiers.
func writeWithout(dir string, _ int) error {
	return e2e.WriteManifests(dir, []e2e.Service{{Name: "service-a", Targets: []int{1, 3}, IDs: map[int]int{1: 0, 3: 2}}}, webRoute)
}

func differing(a, b map[lab.Flow]string) int {
	n := 0
	for f, t := range a {
		if b[f] != t {
			n++
		}
	}
	return n
}
