package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
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

// resources reads every process's RSS, open files, goroutines and
// Prometheus series, and each LB's and target's nftables objects, rules
// and routes. Keys name the role, not the process: a process restarted by
// a fault is compared with the one it replaced.
func (s *soakLab) resources() soak.Resources {
	r := soak.Resources{}
	for i, inst := range s.lbs {
		who := lab.LBName(i)
		s.procResources(r, who, inst.Proc.PID)
		_, body, err := inst.Get("/metrics")
		s.metricsResources(r, who, body, err)
		s.kernelResources(r, who)
	}
	for i, p := range s.ctls {
		who := fmt.Sprintf("controller-%c", 'a'+i)
		s.procResources(r, who, p.cmd.Process.Pid)
		_, body, err := p.get("/metrics")
		s.metricsResources(r, who, body, err)
	}
	for i, p := range s.sidecars {
		who := lab.TargetName(i)
		s.procResources(r, who, p.PID)
		_, body, err := e2e.GetIn(s.lab, who, sidecarAddr, "/metrics")
		s.metricsResources(r, who, body, err)
		s.kernelResources(r, who)
	}
	s.procResources(r, "bird", s.bird.Process.PID)
	return r
}

func (s *soakLab) procResources(r soak.Resources, who string, pid int) {
	st, err := lab.ReadProcStats(pid)
	if err != nil {
		s.t.Fatalf("%s: %v", who, err)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		s.t.Fatalf("%s: %v", who, err)
	}
	r[who+"/rss_bytes"] = float64(st.RSS)
	r[who+"/fds"] = float64(len(fds))
}

// metricsResources counts the series of a /metrics page and reads its
// go_goroutines.
func (s *soakLab) metricsResources(r soak.Resources, who, body string, err error) {
	if err != nil {
		s.t.Fatalf("%s /metrics: %v", who, err)
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
			r[who+"/goroutines"], _ = strconv.ParseFloat(f[1], 64)
		}
	}
	r[who+"/series"] = float64(series)
}

// kernelResources counts node's nftables objects, rules and routes.
func (s *soakLab) kernelResources(r soak.Resources, node string) {
	var ruleset struct {
		Nftables []json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(exec1(s.t, s.lab, node, "nft", "-j", "list", "ruleset")), &ruleset); err != nil {
		s.t.Fatalf("%s: nft -j list ruleset: %v", node, err)
	}
	r[node+"/nft_objects"] = float64(len(ruleset.Nftables))
	r[node+"/rules"] = float64(lines(exec1(s.t, s.lab, node, "ip", "-4", "rule")) + lines(exec1(s.t, s.lab, node, "ip", "-6", "rule")))
	r[node+"/routes"] = float64(lines(exec1(s.t, s.lab, node, "ip", "-4", "route", "show", "table", "all")) +
		lines(exec1(s.t, s.lab, node, "ip", "-6", "route", "show", "table", "all")))
}

func lines(s string) int { return len(strings.Split(strings.TrimSpace(s), "\n")) }

// checkResources fails the test for every resource that moved more than
// the tolerance since warm-up, and logs them all.
func (s *soakLab) checkResources(base, now soak.Resources) {
	var table []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range base {
			if !yield(k) {
				return
			}
		}
	}) {
		table = append(table, fmt.Sprintf("%-28s %14.0f %14.0f", k, base[k], now[k]))
	}
	s.t.Logf("resources after warm-up and at the end:\n  %s", strings.Join(table, "\n  "))
	for _, p := range soak.Flat(base, now, soakTolerance, soakFloor) {
		s.t.Errorf("resource not flat over the soak: %s", p)
	}
}

// checkFreshStart compares each SLLBR's kernel state and `sllbrd show`
// after the soak with what a fresh sllbrd builds on the same objects: it
// restarts each in turn (SIGTERM, as a rollout would) and compares once the
// system is steady again.
func (s *soakLab) checkFreshStart() {
	for i := 1; i <= 3; i++ {
		before := s.lbState(i)
		if err := s.lbs[i].Proc.Terminate(20 * time.Second); err != nil {
			s.t.Fatal(err)
		}
		if err := s.restartLB(i); err != nil {
			s.t.Fatal(err)
		}
		waitFor(s.t, soakConverge, fmt.Sprintf("steady after lb%d's fresh start", i), func() bool { ok, _ := s.steady(); return ok })
		if d := soak.Diff(before, s.lbState(i)); d != "" {
			s.t.Errorf("lb%d after the soak differs from a fresh start on the same objects (before, after):\n%s", i, d)
		}
	}
}

// lbState renders lb i's kernel state (nftables, rules, routes) and what
// `sllbrd show` says, without counters, times and generations.
func (s *soakLab) lbState(i int) string {
	node := lab.LBName(i)
	nft, err := soak.NormalizeRuleset([]byte(exec1(s.t, s.lab, node, "nft", "-j", "list", "ruleset")))
	if err != nil {
		s.t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(nft)
	for _, cmd := range [][]string{{"ip", "-4", "rule"}, {"ip", "-6", "rule"},
		{"ip", "-4", "route", "show", "table", "all"}, {"ip", "-6", "route", "show", "table", "all"}} {
		// Sorted: rules of one priority list in the order they were added,
		// which a restart may change without changing what they do.
		out := strings.Split(strings.TrimSpace(exec1(s.t, s.lab, node, cmd...)), "\n")
		slices.Sort(out)
		fmt.Fprintf(&b, "# %s\n%s\n", strings.Join(cmd, " "), strings.Join(out, "\n"))
	}
	for _, topic := range []string{"routes", "services", "endpoints", "sessions", "config"} {
		var v any
		if err := adminJSON(s.lbs[i].AdminSocket, &v, "show", topic); err != nil {
			s.t.Fatal(err)
		}
		out, _ := json.MarshalIndent(dropVolatile(v), "", " ")
		fmt.Fprintf(&b, "# sllbrd show %s\n%s\n", topic, out)
	}
	return b.String()
}

// volatile are the fields of `sllbrd show -o json` that count or date
// (docs/operations.md): a fresh start has others.
var volatile = []string{"generation", "appliedGeneration", "appliedAt", "lastAttempt", "packets", "bytes", "since",
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
