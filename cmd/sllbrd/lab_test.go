package main

import (
	"context"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// sllbrdBinary is built once per test run by buildSllbrd, into
// sllbrdBinaryDir, which TestMain removes when the run ends.
var sllbrdBinary, sllbrdBinaryDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if sllbrdBinaryDir != "" {
		os.RemoveAll(sllbrdBinaryDir)
	}
	os.Exit(code)
}

var (
	vip4 = netip.MustParseAddr("20.0.0.1")
	vip6 = netip.MustParseAddr("2001:db8::1")
)

// labSetup skips unless root, builds sllbrd once, and returns a new lab
// with lbs LB namespaces and three targets, cleaned up with the test.
func labSetup(t testing.TB, lbs int) *lab.Lab {
	t.Helper()
	return labWith(t, lab.Options{LBs: lbs, Targets: 3, Logger: t})
}

// labWith builds sllbrd once and returns a new lab made with opts, cleaned
// up with the test.
func labWith(t testing.TB, opts lab.Options) *lab.Lab {
	t.Helper()
	require.Lab(t)
	buildSllbrd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := lab.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("lab cleanup: %v", err)
		}
	})
	return l
}

// dataplanes are the --dataplane modes every end-to-end test of the
// dataplane runs with.
var dataplanes = []string{dataplaneKernel, dataplaneBPF, labBPFXDP, dataplaneNFQueue}

// labBPFXDP is the lab's name for --dataplane bpf --bpf-xdp auto (generic
// mode on the lab's veths).
const labBPFXDP = "bpf-xdp"

// labDataplane holds the --dataplane of each lab dataplaneLab made.
var labDataplane sync.Map // *lab.Lab -> string

// forEachDataplane runs test once per dataplane mode, as subtests named
// after the mode.
func forEachDataplane(t *testing.T, test func(t *testing.T, mode string)) {
	for _, mode := range dataplanes {
		t.Run(mode, func(t *testing.T) { test(t, mode) })
	}
}

// dataplaneLab is labSetup for sllbrd instances started with --dataplane
// mode.
func dataplaneLab(t *testing.T, lbs int, mode string) *lab.Lab {
	t.Helper()
	l := labSetup(t, lbs)
	labDataplane.Store(l, mode)
	t.Cleanup(func() { labDataplane.Delete(l) })
	return l
}

// dataplaneArgs appends l's --dataplane (if dataplaneLab made it) to args.
func dataplaneArgs(l *lab.Lab, args ...string) []string {
	switch mode, _ := labDataplane.Load(l); mode {
	case nil:
	case labBPFXDP:
		args = append(args, "--dataplane", dataplaneBPF, "--bpf-xdp", "auto")
	default:
		args = append(args, "--dataplane", mode.(string))
	}
	return args
}

// startSllbrd writes the manifests, starts sllbrd in each given LB, routes
// the VIPs from the gateway via the first one and waits until all are
// programmed.
func startSllbrd(t testing.TB, l *lab.Lab, services []e2e.Service, routes []e2e.Route, lbs ...int) (dir string, insts []*e2e.Instance) {
	t.Helper()
	dir, insts = startInstances(t, l, e2e.Config{Services: services, Routes: routes}, lbs...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.RouteVIPsVia(ctx, lbs[0]); err != nil {
		t.Fatal(err)
	}
	return dir, insts
}

// startInstances writes cfg and starts sllbrd in each given LB, waiting
// until all have programmed it.
func startInstances(t testing.TB, l *lab.Lab, cfg e2e.Config, lbs ...int) (dir string, insts []*e2e.Instance) {
	t.Helper()
	dir = t.TempDir()
	if err := e2e.Write(dir, cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range lbs {
		inst, err := e2e.Start(l, lab.LBName(n), sllbrdBinary, dir, dataplaneArgs(l, "--queues", "2")...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { logTail(t, inst) })
		if err := inst.WaitProgrammed(ctx, 1); err != nil {
			t.Fatal(err)
		}
		insts = append(insts, inst)
	}
	if mode, _ := labDataplane.Load(l); mode == dataplaneBPF || mode == labBPFXDP {
		t.Cleanup(func() { checkBPFPath(t, l, insts) })
	}
	return dir, insts
}

// labPuntsAll marks the labs whose tests send the eBPF datapath only
// packets it must leave to the nftables rules (fragments).
var labPuntsAll sync.Map // *lab.Lab -> bool

// bpfPuntsAll says that the test on l sends only packets the eBPF
// datapath must leave to the nftables rules: checkBPFPath then wants it to
// have punted packets and forwarded none itself.
func bpfPuntsAll(t testing.TB, l *lab.Lab) {
	labPuntsAll.Store(l, true)
	t.Cleanup(func() { labPuntsAll.Delete(l) })
}

// checkBPFPath fails t when the eBPF datapath of none of insts forwarded
// a packet itself (with labBPFXDP: its XDP program): a test on --dataplane
// bpf must have tested it (or, after bpfPuntsAll, when one forwarded a
// packet or none punted one). Instances the test stopped are not asked.
func checkBPFPath(t testing.TB, l *lab.Lab, insts []*e2e.Instance) {
	var tc, xdp, punted float64
	var actions []string
	asked := 0
	for _, inst := range insts {
		_, body, err := inst.Get("/metrics")
		if err != nil {
			continue
		}
		asked++
		for line := range strings.SplitSeq(body, "\n") {
			if !strings.HasPrefix(line, "sllbrd_bpf_packets_total") {
				continue
			}
			actions = append(actions, line)
			f := strings.Fields(line)
			n, _ := strconv.ParseFloat(f[len(f)-1], 64)
			switch {
			case strings.Contains(line, `action="redirect"`):
				tc += n
			case strings.Contains(line, `action="xdp-redirect"`):
				xdp += n
			case strings.Contains(line, `action="punt"`):
				punted += n
			}
		}
	}
	t.Logf("the eBPF datapath of %d running instance(s) forwarded %v packets itself (tc %v, XDP %v) and punted %v", asked, tc+xdp, tc, xdp, punted)
	if asked == 0 {
		return
	}
	mode, _ := labDataplane.Load(l)
	_, all := labPuntsAll.Load(l)
	switch {
	case all:
		if tc+xdp != 0 || punted == 0 {
			t.Errorf("--dataplane bpf: the eBPF datapath forwarded %v packets and punted %v, want none and some; its actions: %q", tc+xdp, punted, actions)
		}
	case mode == labBPFXDP && xdp == 0:
		t.Errorf("--dataplane bpf --bpf-xdp auto: no packet was forwarded by the XDP program; its actions: %q", actions)
	case tc+xdp == 0:
		t.Errorf("--dataplane bpf: no packet was forwarded by the eBPF datapath; its actions: %q", actions)
	}
}

func logTail(t testing.TB, inst *e2e.Instance) {
	if !t.Failed() {
		return
	}
	b, _ := os.ReadFile(inst.Proc.LogPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	t.Logf("sllbrd in %s, last log lines:\n%s", inst.Node, b)
}

// flows runs count flows with fixed source ports and fails the test unless
// every one got an answer.
func flows(t *testing.T, l *lab.Lab, o lab.FlowOptions) map[lab.Flow]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if o.SrcPortBase == 0 {
		o.SrcPortBase = 20000
	}
	got, err := l.Flows(ctx, o)
	if err != nil {
		t.Fatalf("%s flows to %v port %d: %v", o.Proto, o.VIP, o.Port, err)
	}
	return got
}

var allTargets = []e2e.Service{{Name: "service-a", Targets: []int{1, 2, 3}}}

var webRoute = []e2e.Route{{Name: "all", Service: "service-a", Priority: 10,
	Fields: `protocols: [TCP, UDP], destinationPorts: ["80", "5000-5010"]`}}

// startFloods starts a UDP flood to each VIP (IPv4, IPv6) from the client
// with o's settings (o.VIP and o.Stop are set here) and returns the
// function that stops them and returns their results, IPv4 first; a flood
// that failed fails t. Calling it again returns the same results.
func startFloods(t *testing.T, ctx context.Context, l *lab.Lab, o lab.BlastOptions) func() []lab.BlastResult {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	results := make([]lab.BlastResult, 2)
	errs := make([]error, 2)
	for i, vip := range []netip.Addr{vip4, vip6} {
		o := o
		o.VIP, o.Stop = vip, stop
		wg.Go(func() { results[i], errs[i] = l.Blast(ctx, o) })
	}
	return sync.OnceValue(func() []lab.BlastResult {
		close(stop)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("flood %d: %v", i, err)
			}
		}
		return results
	})
}

// waitGeneration waits until inst has programmed generation gen.
func waitGeneration(t *testing.T, inst *e2e.Instance, gen uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := inst.WaitProgrammed(ctx, gen); err != nil {
		t.Fatal(err)
	}
}
