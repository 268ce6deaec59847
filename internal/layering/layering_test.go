package layering

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/sllbrd/sllbrd"

type pkg struct {
	ImportPath string
	Deps       []string // transitive
	Standard   bool
}

// rule forbids packages under from (the package itself and its subpackages)
// to depend, directly or transitively, on any import path with a forbidden
// prefix.
type rule struct {
	from      string
	forbidden []string
}

var thirdPartyKube = []string{"k8s.io/", "sigs.k8s.io/", "github.com/osrg/gobgp", module + "/kube", module + "/bgp"}

var rules = []rule{
	{"dataplane", thirdPartyKube},
	{"maglev", thirdPartyKube},
	{"bfd", append(thirdPartyKube, "github.com/prometheus/")},
	{"bgp", []string{module + "/bfd", module + "/dataplane", module + "/kube", "k8s.io/"}},
	{"model", []string{"k8s.io/", "sigs.k8s.io/", "github.com/"}},
	{"internal/admin", append(thirdPartyKube, module+"/dataplane", module+"/bfd")},
	// The target pod's side knows netlink and plain types only.
	{"internal/targetnet", append(thirdPartyKube, module+"/dataplane", "github.com/prometheus/")},
	// What it shares with dataplane/route: routes over netlink, nothing of sllbrd's.
	{"internal/tableroute", append(thirdPartyKube, module+"/dataplane", module+"/internal/targetnet", module+"/model", "github.com/prometheus/")},
	// The SLLBR's endpoint prober: sockets and plain types only.
	{"internal/liveness", append(thirdPartyKube, module+"/dataplane", module+"/model", "github.com/prometheus/")},
	// The target side's BFD sessions: package bfd and plain types only.
	{"internal/targetbfd", append(thirdPartyKube, module+"/dataplane", module+"/model", "github.com/prometheus/")},
	// The node daemon's view of the runtime: the CRI API (k8s.io/cri-api),
	// nothing of sllbrd's or of the Kubernetes API.
	{"internal/cri", []string{"k8s.io/client-go", "k8s.io/api/", "sigs.k8s.io/", "github.com/osrg/gobgp", "github.com/prometheus/",
		module + "/kube", module + "/bgp", module + "/dataplane", module + "/model", module + "/internal/targetnet"}},
}

// shipped are the packages linked into the sllbrd binary (and their
// subpackages): none may depend on the test harness.
var shipped = []string{"cmd", "dataplane", "maglev", "bfd", "bgp", "kube", "model",
	"internal/metrics", "internal/reconcile", "internal/uplink", "internal/admin", "internal/targetnet",
	"internal/tableroute", "internal/liveness", "internal/targetbfd", "internal/cri", "internal/mountinfo"}

func init() {
	for _, dir := range shipped {
		rules = append(rules, rule{dir, []string{module + "/internal/harness"}})
	}
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json", module+"/...")
	cmd.Dir = "../.."
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(&out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 3 {
		t.Fatalf("go list found only %d packages; the test would check nothing", len(pkgs))
	}
	return pkgs
}

func under(path, dir string) bool {
	p := module + "/" + dir
	return path == p || strings.HasPrefix(path, p+"/")
}

// violations lists the forbidden dependencies of p and how many rules apply.
func violations(p pkg) (bad []string, applied int) {
	for _, r := range rules {
		if !under(p.ImportPath, r.from) {
			continue
		}
		applied++
		for _, d := range p.Deps {
			for _, f := range r.forbidden {
				if strings.HasPrefix(d, f) {
					bad = append(bad, d+" (packages under "+r.from+" must not depend on "+f+")")
				}
			}
		}
	}
	return bad, applied
}

func TestDependencyDirection(t *testing.T) {
	checked := 0
	for _, p := range listPackages(t) {
		bad, applied := violations(p)
		checked += applied
		for _, b := range bad {
			t.Errorf("%s depends on %s", p.ImportPath, b)
		}
	}
	if checked == 0 {
		t.Fatal("no package matched any rule")
	}
}

// TestRulesCatchViolations makes sure the matcher itself works.
func TestRulesCatchViolations(t *testing.T) {
	for _, tc := range []struct {
		p    pkg
		want int
	}{
		{pkg{ImportPath: module + "/dataplane/x", Deps: []string{"fmt", "k8s.io/api/core/v1"}}, 1},
		{pkg{ImportPath: module + "/bgp", Deps: []string{module + "/bfd"}}, 1},
		{pkg{ImportPath: module + "/bfd", Deps: []string{"golang.org/x/sys/unix"}}, 0},
		{pkg{ImportPath: module + "/kube", Deps: []string{"k8s.io/api/core/v1"}}, 0},
		{pkg{ImportPath: module + "/cmd/sllbrd", Deps: []string{module + "/internal/harness/lab"}}, 1},
		{pkg{ImportPath: module + "/internal/harness/e2e", Deps: []string{module + "/internal/harness/lab"}}, 0},
	} {
		if bad, _ := violations(tc.p); len(bad) != tc.want {
			t.Errorf("violations(%s) = %v, want %d", tc.p.ImportPath, bad, tc.want)
		}
	}
}
