package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/maglev"
)

func maglevTable(t *testing.T, n int) *maglev.Table {
	t.Helper()
	tab, err := floorTable(n)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestFloorRuleset: the floor's map holds the Maglev table entry by entry
// as marks, and its one rule hashes the family's addresses and the ports
// with sllbrd's seed into it.
func TestFloorRuleset(t *testing.T) {
	tab := maglevTable(t, 3)
	for _, tc := range []struct {
		vip  string
		rule string
	}{
		{"20.0.0.1", fmt.Sprintf("ip daddr 20.0.0.1 udp dport 6000 meta mark set jhash @nh,96,64 . @th,0,32 mod %d seed %#x map @maglev", tab.Size(), maglev.FlowSeed)},
		{"2001:db8::1", fmt.Sprintf("ip6 daddr 2001:db8::1 udp dport 6000 meta mark set jhash @nh,64,256 . @th,0,32 mod %d seed %#x map @maglev", tab.Size(), maglev.FlowSeed)},
	} {
		script, err := floorRuleset(netip.MustParseAddr(tc.vip), 6000, tab, 3)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(script, "\t\t"+tc.rule+"\n") {
			t.Errorf("%s: no rule %q in\n%.400s", tc.vip, tc.rule, script)
		}
		want := tab.AppendEntrySlots(nil)
		elems := regexp.MustCompile(`(\d+) : 0x([0-9a-f]+)`).FindAllStringSubmatch(script, -1)
		if len(elems) != len(want) {
			t.Fatalf("%s: %d map elements, want %d", tc.vip, len(elems), len(want))
		}
		for i, e := range elems {
			mark, _ := strconv.ParseUint(e[2], 16, 32)
			if e[1] != strconv.Itoa(i) || mark != uint64(floorMark)+uint64(want[i]) {
				t.Fatalf("%s: element %d is %s : %#x, want %d : %#x", tc.vip, i, e[1], mark, i, floorMark+int(want[i]))
			}
		}
	}
	if _, err := floorRuleset(netip.MustParseAddr("20.0.0.1"), 6000, tab, 4); err == nil {
		t.Error("floorRuleset accepted a table of 3 slots for 4 targets")
	}
}

func TestFloorRoutes(t *testing.T) {
	add := floorRoutes("add", netip.MustParseAddr("20.0.0.1"), 2)
	want := "rule add pref 10000 fwmark 0x10000 lookup 65536\n" +
		"route replace default via 169.111.100.11 dev net1 table 65536\n" +
		"rule add pref 10000 fwmark 0x10001 lookup 65537\n" +
		"route replace default via 169.111.100.12 dev net1 table 65537\n"
	if add != want {
		t.Errorf("floorRoutes(add) =\n%s\nwant\n%s", add, want)
	}
	del := floorRoutes("del", netip.MustParseAddr("2001:db8::1"), 1)
	if want := "rule del pref 10000 fwmark 0x10000 lookup 65536\nroute flush table 65536\n"; del != want {
		t.Errorf("floorRoutes(del) = %q, want %q", del, want)
	}
}

// TestSetupsReferToForwarding: every setup is compared with a plain
// kernel forwarding setup of its own placement measured before it; every
// placement has the eBPF datapath (tc, without XDP) beside a kernel path,
// the unpinned one with XDP too, and the unpinned ones are searched and
// profiled.
func TestSetupsReferToForwarding(t *testing.T) {
	for _, senders := range []int{1, 2} {
		ss := setups(options{senders: senders, rig: rigPath})
		bpf, xdp := map[bool]int{}, map[bool]int{} // tc only, and with XDP, by pinned
		for i, s := range ss {
			if s.kernel() {
				continue
			}
			ref := ss[s.reference]
			if !ref.kernel() || ref.pinned != s.pinned || s.reference >= i {
				t.Errorf("%s refers to %s (index %d of %d)", s.name, ref.name, s.reference, i)
			}
			if s.kind() == kindBPF {
				want := actionRedirect
				if s.xdp() {
					want = actionXDPRedirect
					xdp[s.pinned]++
				} else {
					bpf[s.pinned]++
				}
				if _, ok := (&report{setups: ss}).kernelPathOf(s); !ok || s.forwardAction() != want {
					t.Errorf("%s: kernel path of its placement %v, forwarding action %s, want %s", s.name, ok, s.forwardAction(), want)
				}
			}
		}
		if bpf[false] != 1 || (ss[0].pinned && (bpf[true] != 1 || xdp[false] != 1)) {
			t.Errorf("eBPF setups by pinned: tc only %v, with XDP %v", bpf, xdp)
		}
		for name, list := range map[string][]setup{"searched": searched(ss), "profiled": profiled(ss)} {
			var kinds []setupKind
			for _, s := range list {
				if s.pinned || s.fragmentEvery > 0 {
					t.Errorf("%s: %s", name, s.name)
				}
				kinds = append(kinds, s.kind())
			}
			if !slices.Contains(kinds, kindBPF) || !slices.Contains(kinds, kindKernelPath) || !slices.Contains(kinds, kindForwarding) {
				t.Errorf("%s: kinds %v, want forwarding, the kernel path and the eBPF datapath among them", name, kinds)
			}
		}
	}
}

// TestReferToForwarding: a setup added to the list is compared with the
// forwarding setup last before it.
func TestReferToForwarding(t *testing.T) {
	ss := referToForwarding([]setup{{name: "k1"}, {name: "a", dataplane: dataplaneBPF}, {name: "b", floor: true},
		{name: "k2"}, {name: "c", dataplane: dataplaneBPF, xdpArgs: []string{"--x"}}})
	for i, want := range []int{0, 0, 0, 0, 3} {
		if ss[i].reference != want {
			t.Errorf("%s refers to %d, want %d", ss[i].name, ss[i].reference, want)
		}
	}
	if !ss[4].xdp() || ss[1].xdp() || ss[4].forwardAction() != actionXDPRedirect {
		t.Errorf("xdp: %v %v, action %s", ss[4].xdp(), ss[1].xdp(), ss[4].forwardAction())
	}
}

// TestIntegrationFloorDecidesAndLeavesNothing: in a lab, the floor the
// bench programs carries a blast to every target (withFloor checks the
// spread), nothing else routes the VIP in lb1 (a warm-up without it
// delivers nothing), and it removes its table, rules and routes.
func TestIntegrationFloorDecidesAndLeavesNothing(t *testing.T) {
	require.Lab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := lab.New(ctx, lab.Options{Targets: 3, NoResponders: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	})
	b := &bench{lab: l, vip: lab.DefaultVIPs[0], manifests: t.TempDir(), out: io.Discard}
	var blast lab.BlastResult
	err = b.withFloor(ctx, func() (err error) {
		blast, err = l.Blast(ctx, lab.BlastOptions{VIP: b.vip, Count: 3000, Rate: 30000, Duration: time.Second})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if blast.Received != blast.Sent || blast.Sent == 0 {
		t.Errorf("through the floor: sent %d, received %d", blast.Sent, blast.Received)
	}
	lb := lab.LBName(1)
	for _, c := range [][]string{{"nft", "list", "tables"}, {"ip", "rule"}, {"ip", "route", "show", "table", "all"}} {
		out, err := l.Exec(ctx, lb, c...)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if strings.Contains(out, floorTableName) || strings.Contains(out, "fwmark") || strings.Contains(out, fmt.Sprint(floorRouteBase)) {
			t.Errorf("%v still shows the floor:\n%s", c, out)
		}
	}
	if err := b.warmUp(ctx, l); err == nil {
		t.Error("a warm-up arrived without the floor: lb1 routes the VIP by other means, so the floor's checks prove nothing")
	}
}

// TestLBSetups: the LB rig measures plain forwarding first, then the
// kernel path, the eBPF datapath and its XDP program in driver mode, all
// unpinned, each compared with that forwarding, and each searched.
func TestLBSetups(t *testing.T) {
	ss := setups(options{senders: 2, rig: rigLB})
	if len(ss) != 4 || !ss[0].kernel() {
		t.Fatalf("setups %+v: want forwarding and three sllbrd setups", ss)
	}
	for _, s := range ss[1:] {
		if s.pinned || s.reference != 0 || s.floor || s.fragmentEvery != 0 {
			t.Errorf("%s: pinned %v, reference %d, floor %v, fragments %d", s.name, s.pinned, s.reference, s.floor, s.fragmentEvery)
		}
	}
	if x := ss[3]; !x.xdp() || !slices.Equal(x.xdpArgs, []string{"--bpf-xdp", "driver"}) {
		t.Errorf("%s: xdp args %v, want driver mode", x.name, x.xdpArgs)
	}
	if got := len(searched(ss)); got != 4 {
		t.Errorf("%d setups searched, want 4", got)
	}
}
