package onnode

import (
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// TestIntegrationOnNode is the scenario of the package documentation.
func TestIntegrationOnNode(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	var base map[lab.Flow]string
	phases := []struct {
		name string
		run  func()
	}{
		{"kubectl apply -k deploy/", e.installDeploy},
		{"the seed's objects", e.applySeed},
		{"the example application", e.applyApp},
		{"traffic, both families", func() { base = e.trafficBothFamilies() }},
		{"kubectl exec: sllbrd show and explain", func() { e.phaseExec(base) }},
		{"an application pod deleted", func() { base = e.phaseTargetDeleted(base) }},
		{"SLLBR replicas 2 -> 3 -> 2 under load", e.phaseScaling},
		{"rollout restarts under load", e.phaseRolloutRestarts},
		{"the leader controller killed", e.phaseLeaderKilled},
		{"footprint at rest", e.phaseFootprint},
		{"a kubelet that refuses the unsafe sysctls", e.phaseSysctlsRefused},
		{"the kubelet and containerd restarted under load", e.phaseNodeRestarts},
		{"the node daemon installed (deploy/target-node)", e.phaseNodeDaemonInstalled},
		{"the application moved to the node daemon under load", e.phaseMoveToNodeDaemon},
		{"the node daemon restarted under load", e.phaseDaemonRestarted},
		{"SLLBR replicas 2 -> 3 -> 2 under load, node-mode pods", e.phaseScaling},
		{"an application pod created while the node daemon is away", e.phaseCreatedWhileDaemonAway},
		{"the node daemon's footprint at rest", e.phaseDaemonFootprint},
		{"uninstall: the node daemon's cleanup", e.phaseDaemonCleanup},
	}
	for _, p := range phases {
		t.Logf("=== phase %q at %v", p.name, time.Since(start).Round(time.Millisecond))
		p.run()
		if t.Failed() {
			break
		}
	}
	t.Logf("figures of this run:\n%s", strings.Join(e.records, "\n"))
}

// podNames returns the pods' names, sorted.
func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}
