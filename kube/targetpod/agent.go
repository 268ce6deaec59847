package targetpod

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"golang.org/x/sync/errgroup"

	"github.com/sllbrd/sllbrd/internal/targetnet"
)

// Metrics receives what an agent measures; internal/metrics.Target
// implements it. Calls come from several goroutines.
type Metrics interface {
	ObserveApply(o targetnet.Outcome)
	ObserveStatusWrite(err error)
}

// Agent is `sllbrd target` as a sidecar: it follows its own pod
// (WatchPod), applies the pod's desired network configuration to its
// network namespace when the pod is marked for the sidecar, and writes
// what it applied back into the pod's status annotation (a PodAgent of
// SidecarAgent).
type Agent struct {
	pod             *PodAgent
	client          kubernetes.Interface
	namespace, name string
}

// NewAgent returns the sidecar agent of pod namespace/name applying with c
// (an *targetnet.Applier over the pod's own namespace).
func NewAgent(client kubernetes.Interface, namespace, name string, c targetnet.Configurer, opts ...AgentOption) *Agent {
	write := func(ctx context.Context, value string) error {
		ctx, cancel := context.WithTimeout(ctx, StatusWriteTimeout)
		defer cancel()
		return PatchStatus(ctx, client, namespace, name, "", value)
	}
	return &Agent{pod: NewPodAgent(SidecarAgent, c, write, opts...), client: client, namespace: namespace, name: name}
}

// Run follows the pod, applies and reports until ctx ends. What was
// applied stays in the namespace when it returns.
func (a *Agent) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return a.pod.Run(ctx) })
	g.Go(func() error { return WatchPod(ctx, a.client, a.namespace, a.name, a.pod.log, a.pod.Seen) })
	return g.Wait()
}

// Ready reports whether the pod's desired configuration is applied, and
// why not (/readyz).
func (a *Agent) Ready() (bool, []string) { return a.pod.Ready() }

type noMetrics struct{}

func (noMetrics) ObserveApply(targetnet.Outcome) {}
func (noMetrics) ObserveStatusWrite(error)       {}
