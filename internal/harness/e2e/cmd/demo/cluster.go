package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
)

// clientGoLog matches the klog lines of client-go and the processes' JSON
// logs, which the narrative leaves out; testLogPrefix the file:line of the
// test's log lines.
var (
	clientGoLog   = regexp.MustCompile(`^[IWE]\d{4} |^\s*\{"time"`)
	testLogPrefix = regexp.MustCompile(`^\w+\.go:\d+: `)
)

// runCluster is `make demo DEMO=cluster`: the whole system as in a cluster
// (kube-apiserver, `sllbrd controller`, SLLBR instances behind BIRD,
// `sllbrd target` in every target, a client), as TestIntegrationCluster of
// cmd/sllbrd runs it: the test is the scenario, its log is the narrative.
func runCluster(ctx context.Context) error {
	return runScenario(ctx, "the whole system in the lab", "TestIntegrationCluster", "./cmd/sllbrd/")
}

// runNode is `make demo DEMO=node`: sllbrd on a real Kubernetes node,
// deployed with kubectl from deploy/ and its image, traffic end to end and
// the operations users do, as TestIntegrationOnNode runs it.
func runNode(ctx context.Context) error {
	return runScenario(ctx, "sllbrd on a Kubernetes node", "TestIntegrationOnNode", "./internal/harness/e2e/onnode/")
}

// runScenario runs one integration test and prints its log as the
// narrative.
func runScenario(ctx context.Context, what, test, pkg string) error {
	root, err := e2e.ModuleRoot()
	if err != nil {
		return err
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		step("finding the Kubernetes binaries (hack/kube-assets.sh builds them once, ~10 min)")
		out, err := exec.CommandContext(ctx, filepath.Join(root, "hack", "kube-assets.sh")).Output()
		if err != nil {
			return fmt.Errorf("hack/kube-assets.sh: %w", err)
		}
		assets = strings.TrimSpace(string(out))
	}
	step("running %s (%s of %s)", what, test, pkg)
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-timeout=40m", "-v", "-run", "^"+test+"$", pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KUBEBUILDER_ASSETS="+assets, "SLLBRD_REQUIRE_INTEGRATION=1")
	cmd.Stderr = cmd.Stdout
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); !clientGoLog.MatchString(line) {
			fmt.Println("    " + narrative(line))
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("the scenario failed (its log is above): %w", err)
	}
	return nil
}

// narrative is a line of `go test -v` without the test log's indentation
// and file:line prefix; a continuation line of a multi-line log entry
// keeps its own indentation (YAML the test prints).
func narrative(line string) string {
	line = strings.TrimPrefix(line, "    ")
	if testLogPrefix.MatchString(line) {
		return testLogPrefix.ReplaceAllString(line, "")
	}
	return strings.TrimPrefix(line, "    ")
}
