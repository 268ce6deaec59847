package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// The Grafana dashboard and the PromQL of docs/metrics.md may only use
// metrics the daemon (and the controller) export, with their labels:
// these tests check every expression against the registry that
// registerAll fills the way sllbrd does.

const (
	dashboardPath = "../../deploy/monitoring/sllbrd-dashboard.json"
	metricsDoc    = "../../docs/metrics.md"
)

// metricRef finds a metric name in PromQL and the label matchers written
// right after it. Every name sllbrd exports starts with sllbrd_, go_ or
// process_; label names never do.
var (
	metricRef    = regexp.MustCompile(`\b((?:sllbrd|go|process)_[a-zA-Z0-9_]*)(\{[^}]*\})?`)
	matcherLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
)

// scrapeLabels are added by Prometheus and the Prometheus Operator to every
// series of a target.
var scrapeLabels = []string{"namespace", "pod", "job", "instance", "container", "endpoint"}

// family is what the registry exports under one name.
type family struct {
	typ    dto.MetricType
	labels map[string]bool
}

func registryFamilies(t *testing.T) map[string]family {
	t.Helper()
	reg := NewRegistry()
	registerAll(t, reg)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]family{}
	for _, mf := range mfs {
		f := family{typ: mf.GetType(), labels: map[string]bool{}}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				f.labels[l.GetName()] = true
			}
		}
		out[mf.GetName()] = f
	}
	return out
}

// checkExpr returns what expr uses that families do not export: unknown
// names, and label matchers on labels the metric does not have.
func checkExpr(expr string, families map[string]family) (problems []string, names []string) {
	for _, m := range metricRef.FindAllStringSubmatch(expr, -1) {
		name, matchers := m[1], m[2]
		f, ok := families[name]
		extra := []string{}
		if !ok { // a histogram's or summary's series
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				base, cut := strings.CutSuffix(name, suffix)
				bf, found := families[base]
				if cut && found && (bf.typ == dto.MetricType_HISTOGRAM || bf.typ == dto.MetricType_SUMMARY) {
					f, ok = bf, true
					if suffix == "_bucket" {
						extra = append(extra, "le")
					}
				}
			}
		}
		if !ok {
			problems = append(problems, "unknown metric "+name)
			continue
		}
		names = append(names, name)
		for _, lm := range matcherLabel.FindAllStringSubmatch(matchers, -1) {
			l := lm[1]
			if !f.labels[l] && !slices.Contains(scrapeLabels, l) && !slices.Contains(extra, l) {
				problems = append(problems, name+" has no label "+l)
			}
		}
	}
	return problems, names
}

// dashboardExprs collects every query of the dashboard: panel targets'
// expr and the variables' queries.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "query" || k == "definition") {
					out = append(out, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	return out
}

func TestDashboardUsesOnlyExportedMetrics(t *testing.T) {
	families := registryFamilies(t)
	exprs := dashboardExprs(t)
	used := map[string]bool{}
	for _, e := range exprs {
		problems, names := checkExpr(e, families)
		for _, p := range problems {
			t.Errorf("dashboard: %s in %q", p, e)
		}
		for _, n := range names {
			used[n] = true
		}
	}
	// The questions the dashboard answers need these.
	for _, n := range []string{"sllbrd_ready", "sllbrd_config_component_failing", "sllbrd_endpoint_packets_total",
		"sllbrd_nfqueue_kernel_dropped_total", "sllbrd_bgp_session_up", "sllbrd_bfd_session_up"} {
		if !used[n] {
			t.Errorf("the dashboard does not use %s", n)
		}
	}
	if len(exprs) < 30 {
		t.Fatalf("only %d expressions found in %s: the walk misses panels", len(exprs), dashboardPath)
	}
}

// TestDashboardPanels checks the dashboard's structure: a uid, unique
// panel ids, every panel on the data source variable with a query.
func TestDashboardPanels(t *testing.T) {
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			ID         int    `json:"id"`
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" {
		t.Error("no uid")
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d repeated", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 || slices.ContainsFunc(p.Targets, func(x struct {
			Expr string `json:"expr"`
		}) bool {
			return x.Expr == ""
		}) {
			t.Errorf("panel %q: data source %q, %d targets (each needs an expr)", p.Title, p.Datasource.UID, len(p.Targets))
		}
	}
}

// TestMetricsDocQueries checks the ```promql blocks of docs/metrics.md the
// same way.
func TestMetricsDocQueries(t *testing.T) {
	b, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	families := registryFamilies(t)
	n := 0
	for _, block := range promqlBlocks(string(b)) {
		n++
		problems, _ := checkExpr(block, families)
		for _, p := range problems {
			t.Errorf("docs/metrics.md: %s in\n%s", p, block)
		}
	}
	if n < 4 {
		t.Fatalf("only %d promql blocks in docs/metrics.md", n)
	}
}

// promqlBlocks returns the contents of the ```promql fences, without
// comment lines.
func promqlBlocks(doc string) []string {
	var out []string
	for _, part := range strings.Split(doc, "```promql\n")[1:] {
		body, _, _ := strings.Cut(part, "```")
		var lines []string
		for l := range strings.SplitSeq(body, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "#") {
				lines = append(lines, l)
			}
		}
		out = append(out, strings.Join(lines, "\n"))
	}
	return out
}

// TestCheckExprCatchesMistakes makes sure the checks above can fail.
func TestCheckExprCatchesMistakes(t *testing.T) {
	families := registryFamilies(t)
	for expr, want := range map[string]string{
		`rate(sllbrd_nonexistent_total[5m])`:                              "unknown metric sllbrd_nonexistent_total",
		`sum(rate(sllbrd_packets_total{reasn="balanced"}[5m]))`:           "sllbrd_packets_total has no label reasn",
		`sllbrd_ready_bucket`:                                             "unknown metric sllbrd_ready_bucket",
		`rate(sllbrd_config_apply_latency_seconds_bucket{le="0.05"}[5m])`: "",
		`sllbrd_bgp_session_up{pod="x", peer="192.0.2.1"}`:                "",
	} {
		problems, _ := checkExpr(expr, families)
		if want == "" && len(problems) > 0 || want != "" && !slices.Contains(problems, want) {
			t.Errorf("checkExpr(%q) = %q, want %q", expr, problems, want)
		}
	}
}
