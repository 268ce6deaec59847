package targetnode

import (
	"cmp"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// nodeMetrics feeds the outcomes of every pod's agent to one
// targetpod.Metrics made for one pod (internal/metrics.Target): each apply
// is observed with its own error and duration (the counters and the
// histogram count every apply of the node), and with the sum of the last
// result of every pod (the gauges: VIPs and next hops per Gateway, kept
// next hops and conflicts over the node's pods). The applied generation
// belongs to one pod and means nothing for a node: it is observed as 0.
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
