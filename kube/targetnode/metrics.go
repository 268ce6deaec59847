package targetnode

import (
	"cmp"
	"errors"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sllbrd/sllbrd/internal/cri"
	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// The states of a pod the daemon follows (PodStates), the values of
// sllbrd_target_pods' state label; each pod is in exactly one.
const (
	// PodApplied: its desired configuration is applied and nothing is in
	// the way (its agent is ready: the status it writes says ready).
	PodApplied = "applied"
	// PodNotReady: not applied yet (no desired configuration, or a new
	// generation on its way), applying failed, foreign configuration in
	// the way, or the desired annotation is invalid.
	PodNotReady = "not_ready"
	// PodNoSandbox: the last apply found no network namespace (no ready
	// sandbox, or its file gone): skipped, tried again with backoff and on
	// every change of the pod.
	PodNoSandbox = "no_sandbox"
	// PodRefused: never configured by the daemon: hostNetwork (by the
	// pod's spec or the runtime's answer), or an unknown target-agent mark.
	PodRefused = "refused"
)

// What the last apply of a pod found of its namespace (podNamespace.found).
const (
	nsOpened int32 = iota // opened, or failed for another reason
	nsNone                // no network namespace: targetpod.ErrNoNamespace
	nsNodes               // the runtime runs the pod in the node's namespace
)

// PodStates counts the pods the daemon follows by state, every state
// present (0 included). A pod no longer followed (deleted, finished,
// marked for the sidecar, without target annotations) is in none. For
// scrapes: it asks each pod's agent whether it is ready.
func (d *Daemon) PodStates() map[string]int {
	out := map[string]int{PodApplied: 0, PodNotReady: 0, PodNoSandbox: 0, PodRefused: 0}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.pods {
		out[w.state()]++
	}
	return out
}

// state is the pod's PodStates state; under Daemon.mu.
func (w *worker) state() string {
	found := w.ns.found.Load()
	switch {
	case w.refused || found == nsNodes:
		return PodRefused
	case found == nsNone:
		return PodNoSandbox
	}
	if ok, _ := w.agent.Ready(); ok {
		return PodApplied
	}
	return PodNotReady
}

// refuses reports whether the daemon's agent of pod (a pod it follows:
// not marked for the sidecar) configures nothing in it, as the agent
// decides (targetpod): an unknown target-agent mark, or hostNetwork.
func refuses(pod *corev1.Pod) bool {
	_, err := targetpod.AgentMode(pod)
	return err != nil || pod.Spec.HostNetwork
}

// observe records what opening the pod's namespace for an apply found
// (err is open's): the pod's state, and the count of applies skipped.
func (p *podNamespace) observe(err error) {
	found := nsOpened
	switch {
	case errors.Is(err, targetpod.ErrNoNamespace):
		found = nsNone
		p.d.unavailable.Add(1)
	case errors.Is(err, cri.ErrHostNetwork):
		found = nsNodes
	}
	p.found.Store(found)
	if found != nsOpened {
		p.mu.Lock()
		p.current = nsID{}
		p.mu.Unlock()
		p.bfd.namespaceChanged() // its BFD sessions stop: they would keep the namespace alive
	}
}

// RuntimeUp reports whether the container runtime answered the last
// probe (false before the first, and in cleanup mode, which probes not).
func (d *Daemon) RuntimeUp() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.probed && d.runtime == nil
}

// NamespaceUnavailable counts, since New, the applies skipped because the
// pod had no network namespace (no ready sandbox, or its file gone),
// clean-up's included.
func (d *Daemon) NamespaceUnavailable() uint64 { return d.unavailable.Load() }

// nodeMetrics feeds the outcomes of every pod's agent to one
// targetpod.Metrics made for one pod (internal/metrics.Target): each apply
// is observed with its own error and duration (the counters and the
// histogram count every apply of the node), and with the sum of the last
// result of every pod (the gauges: VIPs and next hops per Gateway, kept
// next hops and conflicts over the node's pods). The applied generation
// belongs to one pod and means nothing for a node: it is observed as 0,
// and internal/metrics.TargetNode does not export it.
// A pod that goes away leaves the gauges at the next apply of another pod.
type nodeMetrics struct {
	inner targetpod.Metrics
	mu    sync.Mutex
	last  map[types.UID]targetnet.Result
}

func newNodeMetrics(m targetpod.Metrics) *nodeMetrics {
	return &nodeMetrics{inner: m, last: map[types.UID]targetnet.Result{}}
}

// forPod is what the agent of pod uid reports to.
func (m *nodeMetrics) forPod(uid types.UID) targetpod.Metrics { return podMetrics{m, uid} }

func (m *nodeMetrics) forget(uid types.UID) {
	m.mu.Lock()
	delete(m.last, uid)
	m.mu.Unlock()
}

func (m *nodeMetrics) observeApply(uid types.UID, o targetnet.Outcome) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last[uid] = o.Result
	m.inner.ObserveApply(targetnet.Outcome{Result: m.sum(), Err: o.Err, Took: o.Took, Changed: o.Changed})
}

// sum merges the last results of every pod by Gateway name.
func (m *nodeMetrics) sum() targetnet.Result {
	var out targetnet.Result
	byName := map[string]*targetnet.GatewayResult{}
	for _, r := range m.last {
		out.Conflicts = append(out.Conflicts, r.Conflicts...)
		for _, g := range r.Gateways {
			s, ok := byName[g.Name]
			if !ok {
				s = &targetnet.GatewayResult{Name: g.Name}
				byName[g.Name] = s
			}
			s.VIPs = append(s.VIPs, g.VIPs...)
			s.NextHops = append(s.NextHops, g.NextHops...)
			for _, f := range g.Kept {
				if !slices.Contains(s.Kept, f) {
					s.Kept = append(s.Kept, f)
				}
			}
		}
	}
	for _, g := range byName {
		out.Gateways = append(out.Gateways, *g)
	}
	slices.SortFunc(out.Gateways, func(a, b targetnet.GatewayResult) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

type podMetrics struct {
	node *nodeMetrics
	uid  types.UID
}

func (p podMetrics) ObserveApply(o targetnet.Outcome) { p.node.observeApply(p.uid, o) }
func (p podMetrics) ObserveStatusWrite(err error)     { p.node.inner.ObserveStatusWrite(err) }
