package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/soak"
)

// The soak's resources (flat after warm-up) and final state (equal to a
// fresh start's on the same objects).

// soakTolerance: a resource may differ this much from its value after
// warm-up (or by soakFloor, for small counts).
const (
	soakTolerance = 0.10
	soakFloor     = 2
)

// sample is the resources at one time, with the process of each role.
type sample struct {
	r    soak.Resources
	pids map[string]int
	// leads: whether each controller replica led (a standby holds fewer
	// caches and series than a leader: not comparable).
	leads map[string]bool
}

// resources reads every process's RSS, open files, goroutines and
// Prometheus series, the live heap of every sllbrd (SLLBR, controller
// replica, sidecar), and each LB's and target's nftables objects, rules
// and routes. Keys name the role; pids says which process played it.
func (s *soakLab) resources() sample {
	r := sample{soak.Resources{}, map[string]int{}, map[string]bool{}}
	for i, inst := range s.lbs {
		who := lab.LBName(i)
		s.heapResources(r, who, inst.Proc.PID, func(path string) (int, string, error) { return inst.GetAt(soakPprof, path) })
		s.procResources(r, who, inst.Proc.PID)
		s.metricsResources(r, who, func() (string, error) { _, body, err := inst.Get("/metrics"); return body, err })
		s.kernelResources(r, who)
	}
	for i, p := range s.ctls {
		who := fmt.Sprintf("controller-%c", 'a'+i)
		s.heapResources(r, who, p.cmd.Process.Pid, p.getPprof)
		s.procResources(r, who, p.cmd.Process.Pid)
		r.leads[who] = p.metric("sllbrd_controller_leader") == 1
		s.metricsResources(r, who, func() (string, error) { _, body, err := p.get("/metrics"); return body, err })
	}
	for i, p := range s.sidecars {
		who := lab.TargetName(i)
		s.heapResources(r, who, p.PID, func(path string) (int, string, error) { return e2e.GetIn(s.lab, who, soakPprof, path) })
		s.procResources(r, who, p.PID)
		s.metricsResources(r, who, func() (string, error) {
			_, body, err := e2e.GetIn(s.lab, who, sidecarAddr, "/metrics")
			return body, err
		})
		s.kernelResources(r, who)
	}
	s.procResources(r, "bird", s.bird.Process.PID)
	return r
}

func (s *soakLab) procResources(r sample, who string, pid int) {
	r.pids[who] = pid
	st, err := lab.ReadProcStats(pid)
	if err != nil {
		s.fails.fatalf(s.t, "%s: %v", who, err)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		s.fails.fatalf(s.t, "%s: %v", who, err)
	}
	r.r[who+"/rss_bytes"] = float64(st.RSS)
	r.r[who+"/rss_anon_bytes"] = float64(st.RSSAnon)
	r.r[who+"/fds"] = float64(len(fds))
}

// goroutineReads is how many times metricsResources reads go_goroutines.
const goroutineReads = 3

// metricsResources counts the series of a /metrics page and reads its
// go_goroutines: the least of goroutineReads reads 50 ms apart. A process
// serves the soak's own requests with goroutines that end a moment after
// each (the pprof read just before, a request's connection), up to 3 in a
// sidecar of 22; a leaked goroutine is in every read.
func (s *soakLab) metricsResources(r sample, who string, get func() (string, error)) {
	least := math.Inf(1)
	for i := range goroutineReads {
		if i > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		body, err := get()
		if err != nil {
			s.fails.fatalf(s.t, "%s /metrics: %v", who, err)
		}
		series := 0
		sc := bufio.NewScanner(strings.NewReader(body))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			series++
			if f := strings.Fields(line); len(f) == 2 && f[0] == "go_goroutines" {
				if v, err := strconv.ParseFloat(f[1], 64); err == nil {
					least = min(least, v)
				}
			}
		}
		if i == 0 {
			r.r[who+"/series"] = float64(series)
		}
	}
	if !math.IsInf(least, 1) {
		r.r[who+"/goroutines"] = least
	}
}

// kernelResources counts node's nftables objects, rules and routes.
func (s *soakLab) kernelResources(r sample, node string) {
	var ruleset struct {
		Nftables []json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(exec1(s.t, s.lab, node, "nft", "-j", "list", "ruleset")), &ruleset); err != nil {
		s.fails.fatalf(s.t, "%s: nft -j list ruleset: %v", node, err)
	}
	r.r[node+"/nft_objects"] = float64(len(ruleset.Nftables))
	r.r[node+"/rules"] = float64(lines(exec1(s.t, s.lab, node, "ip", "-4", "rule")) + lines(exec1(s.t, s.lab, node, "ip", "-6", "rule")))
	r.r[node+"/routes"] = float64(lines(exec1(s.t, s.lab, node, "ip", "-4", "route", "show", "table", "all")) +
		lines(exec1(s.t, s.lab, node, "ip", "-6", "route", "show", "table", "all")))
}

func lines(s string) int { return len(strings.Split(strings.TrimSpace(s), "\n")) }

// livedThrough reports whether the process playing who after warm-up
// still plays it at the end: the same PID, and for a controller replica
// the same role (a standby holds fewer caches and series than a leader).
func livedThrough(base, now sample, who string) bool {
	return now.pids[who] == base.pids[who] && now.leads[who] == base.leads[who]
}

// checkResources fails the test for every resource that moved more than
// the tolerance since warm-up, and logs them all. A process a fault
// restarted, or a controller replica whose role changed, is not compared
// with what it was (a fresh process is not a leak's measure, nor is a
// standby a leader's): neither its live heap, files, goroutines nor
// series; its kernel state is.
func (s *soakLab) checkResources(base, now sample) {
	b, n := maps.Clone(base.r), maps.Clone(now.r)
	var restarted []string
	for who := range base.pids {
		if livedThrough(base, now, who) {
			continue
		}
		restarted = append(restarted, who)
		for _, what := range []string{"heap_live_bytes", "fds", "goroutines", "series"} {
			delete(b, who+"/"+what)
			delete(n, who+"/"+what)
		}
	}
	slices.Sort(restarted)
	// Logged, not compared here: the RSS counts the executable's pages,
	// which grow as faults run code for the first time (shared with every
	// process of the image, and reclaimable); the process's own memory,
	// its anonymous part, has its own warm-up (checkMemory).
	for who := range base.pids {
		for _, what := range []string{"rss_bytes", "rss_anon_bytes"} {
			delete(b, who+"/"+what)
			delete(n, who+"/"+what)
		}
	}
	var table []string
	for _, k := range slices.Sorted(maps.Keys(base.r)) {
		table = append(table, fmt.Sprintf("%-28s %14.0f %14.0f", k, base.r[k], now.r[k]))
	}
	s.t.Logf("resources after warm-up and at the end (restarted by faults or changed role, compared by kernel state only: %v):\n  %s",
		restarted, strings.Join(table, "\n  "))
	// Goroutines are a leak's measure one way only: a process that ends
	// with fewer than after warm-up has ended some (t1's sidecar twice, 25
	// -> 22 and 24 -> 22, its descriptors unchanged), and a worker lost
	// that way fails the soak's traffic and readiness checks instead.
	for k, v := range n {
		if strings.HasSuffix(k, "/goroutines") && v < b[k] {
			n[k] = b[k]
		}
	}
	for _, p := range soak.Flat(b, n, soakTolerance, soakFloor) {
		s.fails.errorf(s.t, "resource not flat over the soak: %s", p)
	}
}

// checkFreshStart compares each SLLBR after the soak with what a fresh
// sllbrd builds on the same objects: it restarts each in turn (SIGTERM, as
// a rollout would) and compares once the system is steady again, what
// every sample flow is decided to (`sllbrd explain`: the Maglev tables
// agree), the kernel state and `sllbrd show`.
func (s *soakLab) checkFreshStart() {
	for i := 1; i <= 3; i++ {
		before, decided, raw := s.lbState(i), s.decisions(i), s.rawState(i)
		if err := s.terminate(i); err != nil {
			s.fails.fatalf(s.t, "%v", err)
		}
		if err := s.restartLB(i); err != nil {
			s.fails.fatalf(s.t, "%v", err)
		}
		waitFor(s.t, soakConverge, fmt.Sprintf("steady after lb%d's fresh start", i), func() bool {
			s.probeReadiness() // kubelet's part
			ok, _ := s.steady()
			return ok
		})
		if d := soak.Diff(before, s.lbState(i)); d != "" {
			dir, _ := os.MkdirTemp("", fmt.Sprintf("sllbrd-soak-lb%d-state-", i))
			_ = os.WriteFile(filepath.Join(dir, "before.txt"), []byte(raw), 0o644)
			_ = os.WriteFile(filepath.Join(dir, "after.txt"), []byte(s.rawState(i)), 0o644)
			s.fails.errorf(s.t, "lb%d after the soak differs from a fresh start on the same objects (before, after; both in full in %s):\n%s", i, dir, d)
		}
		if d := soak.Diff(decided, s.decisions(i)); d != "" {
			s.fails.errorf(s.t, "lb%d after the soak decides flows otherwise than a fresh start (before, after):\n%s", i, d)
		}
	}
}

// decisions lists what lb i decides sample flows to: 64 UDP and 64 TCP
// flows per VIP.
func (s *soakLab) decisions(i int) string {
	var b strings.Builder
	for _, vip := range []netip.Addr{vip4, vip6} {
		for _, proto := range []string{"udp", "tcp"} {
			for p := range 64 {
				f := lab.Flow{Proto: proto, Src: netip.AddrPortFrom(lab.ClientAddrs().For(vip), uint16(40000+p)),
					Dst: netip.AddrPortFrom(vip, map[string]uint16{"udp": soakUDPPort, "tcp": flowPort}[proto])}
				x, err := explainSoakFlow(s.lbs[i].AdminSocket, f)
				if err != nil {
					s.fails.fatalf(s.t, "%v", err)
				}
				fmt.Fprintf(&b, "%s -> %s\n", f, decidedTo(x))
			}
		}
	}
	return b.String()
}

// kernelNumbers are the numbers a process allocates in its own order:
// fwmarks, the routing tables named after them, the map values holding
// them (5 digits or more, decimal or hex; no address or port has as many).
var kernelNumbers = regexp.MustCompile(`\b(0x[0-9a-f]{5,}|[0-9]{5,})\b`)

// lbState renders lb i's kernel state (nftables, rules, routes) and what
// `sllbrd show` says, without counters, times, generations and the
// numbers sllbrd allocates per process (fwmarks and their tables: a fresh
// start numbers its endpoints afresh; decisions compares what they mean).
func (s *soakLab) lbState(i int) string {
	node := lab.LBName(i)
	nft, err := soak.NormalizeRuleset([]byte(exec1(s.t, s.lab, node, "nft", "-j", "list", "ruleset")))
	if err != nil {
		s.fails.fatalf(s.t, "%v", err)
	}
	var b strings.Builder
	b.WriteString(sortElements(kernelNumbers.ReplaceAllString(nft, "#")))
	for _, cmd := range [][]string{{"ip", "-4", "rule"}, {"ip", "-6", "rule"},
		{"ip", "-4", "route", "show", "table", "all"}, {"ip", "-6", "route", "show", "table", "all"}} {
		// Sorted: rules of one priority list in the order they were added,
		// which a restart may change without changing what they do.
		out := strings.Split(strings.TrimSpace(kernelNumbers.ReplaceAllString(exec1(s.t, s.lab, node, cmd...), "#")), "\n")
		slices.Sort(out)
		fmt.Fprintf(&b, "# %s\n%s\n", strings.Join(cmd, " "), strings.Join(out, "\n"))
	}
	for _, topic := range []string{"routes", "services", "endpoints", "sessions", "config"} {
		var v any
		if err := adminJSON(s.lbs[i].AdminSocket, &v, "show", topic); err != nil {
			s.fails.fatalf(s.t, "%v", err)
		}
		out, _ := json.MarshalIndent(dropVolatile(v), "", " ")
		fmt.Fprintf(&b, "# sllbrd show %s\n%s\n", topic, out)
	}
	return b.String()
}

// sortElements sorts each run of set and map element lines: nft lists
// them in key order, and masked keys (fwmarks) leave only the order of
// their values, which a fresh start's numbering changes.
func sortElements(text string) string {
	lines := strings.Split(text, "\n")
	isElem := func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "elem ") }
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && isElem(lines[j]) {
			j++
		}
		slices.Sort(lines[i:j])
		i = max(j, i+1)
	}
	return strings.Join(lines, "\n")
}

// rawState is lb i's kernel state as nft and ip print it.
func (s *soakLab) rawState(i int) string {
	var b strings.Builder
	for _, cmd := range [][]string{{"nft", "list", "ruleset"}, {"ip", "-4", "rule"}, {"ip", "-6", "rule"},
		{"ip", "-4", "route", "show", "table", "all"}, {"ip", "-6", "route", "show", "table", "all"}} {
		fmt.Fprintf(&b, "# %s\n%s\n", strings.Join(cmd, " "), exec1(s.t, s.lab, lab.LBName(i), cmd...))
	}
	var eps any
	if err := adminJSON(s.lbs[i].AdminSocket, &eps, "show", "endpoints"); err == nil {
		out, _ := json.MarshalIndent(eps, "", " ")
		fmt.Fprintf(&b, "# sllbrd show endpoints\n%s\n", out)
	}
	return b.String()
}

// volatile are the fields of `sllbrd show -o json` that count or date
// (docs/operations.md): a fresh start has others.
var volatile = []string{"mark", "generation", "appliedGeneration", "appliedAt", "lastAttempt", "packets", "bytes", "since",
	"sinceSeconds", "transitions", "lastReply", "rttSeconds", "uptimeSeconds", "flaps", "lastDownReason",
	"upTransitions", "downTransitions", "localDiagnostic", "remoteDiagnostic"}

func dropVolatile(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range volatile {
			delete(v, k)
		}
		for k, x := range v {
			v[k] = dropVolatile(x)
		}
	case []any:
		for i, x := range v {
			v[i] = dropVolatile(x)
		}
	}
	return v
}
