package targetpod

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"golang.org/x/sync/errgroup"

	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube"
)

// Metrics receives what the agent measures; internal/metrics.Target
// implements it. Calls come from several goroutines.
type Metrics interface {
	ObserveApply(o targetnet.Outcome)
	ObserveStatusWrite(err error)
}

// Agent is `sllbrd target`: it follows its own pod, applies the pod's
// desired network configuration to its network namespace and writes what
// it applied back into the pod's status annotation.
type Agent struct {
	client          kubernetes.Interface
	namespace, name string
	loop            *targetnet.Loop
	log             *slog.Logger
	metrics         Metrics
	requireConfig   bool
	loopOpts        []targetnet.LoopOption
	kick            chan struct{}

	mu         sync.Mutex
	podSeen    bool
	podGone    bool
	desired    string // the desired annotation last read
	haveConfig bool   // desired holds a valid configuration
	generation int64  // its generation (0: none)
	parseErr   error
	outcome    *targetnet.Outcome
	onPod      string // the status annotation on the pod as last seen or written
}

// AgentOption configures an Agent.
type AgentOption func(*Agent)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) AgentOption { return func(a *Agent) { a.log = l } }

// WithMetrics sets where measurements go.
func WithMetrics(m Metrics) AgentOption { return func(a *Agent) { a.metrics = m } }

// WithRequireConfig sets whether the agent is ready only once the pod has
// a desired configuration (default true: a pod is not ready before its
// VIPs are in place).
func WithRequireConfig(b bool) AgentOption { return func(a *Agent) { a.requireConfig = b } }

// WithLoopOptions passes options to the apply loop (resync, backoff).
func WithLoopOptions(o ...targetnet.LoopOption) AgentOption {
	return func(a *Agent) { a.loopOpts = append(a.loopOpts, o...) }
}

// NewAgent returns the agent of pod namespace/name applying with applier.
func NewAgent(c kubernetes.Interface, namespace, name string, applier *targetnet.Applier, opts ...AgentOption) *Agent {
	a := &Agent{client: c, namespace: namespace, name: name, log: slog.Default(), metrics: noMetrics{},
		requireConfig: true, kick: make(chan struct{}, 1)}
	for _, o := range opts {
		o(a)
	}
	a.loop = targetnet.NewLoop(applier, a.applied, a.loopOpts...)
	return a
}

// Run follows the pod, applies and reports until ctx ends. What was
// applied stays in the namespace when it returns.
func (a *Agent) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return a.loop.Run(ctx) })
	g.Go(func() error { return WatchPod(ctx, a.client, a.namespace, a.name, a.log, a.seen) })
	g.Go(func() error { a.writeStatus(ctx); return nil })
	return g.Wait()
}

// seen takes one version of the pod.
func (a *Agent) seen(pod *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.wake()
	a.podSeen = true
	if a.podGone = pod == nil; a.podGone {
		return // being deleted: what is applied stays for the connections draining
	}
	a.onPod = pod.Annotations[kube.AnnotationTargetNetworkStatus]
	value, set := pod.Annotations[kube.AnnotationTargetNetwork]
	if value == a.desired && a.outcome != nil {
		return
	}
	a.desired = value
	if !set {
		a.haveConfig, a.generation, a.parseErr = false, 0, nil
		a.loop.Set(0, targetnet.Desired{}) // nothing wanted: ours goes
		return
	}
	d, err := ParseDesired(value)
	if err != nil {
		a.parseErr = err
		a.log.Error("the pod's network configuration is invalid; what was applied stays", "annotation", kube.AnnotationTargetNetwork, "err", err)
		return
	}
	a.haveConfig, a.generation, a.parseErr = true, d.Generation, nil
	a.loop.Set(d.Generation, d.Net())
}

// applied takes the outcome of an apply.
func (a *Agent) applied(o targetnet.Outcome) {
	a.metrics.ObserveApply(o)
	a.mu.Lock()
	prev := a.outcome
	a.outcome = &o
	a.mu.Unlock()
	a.wake()
	switch {
	case o.Err != nil:
		a.log.Warn("applying the network configuration failed; retrying", "generation", o.Generation, "err", o.Err)
	case prev == nil || prev.Generation != o.Generation || prev.Err != nil:
		a.log.Info("network configuration applied", "generation", o.Generation, "vips", o.Result.VIPCount(),
			"next_hops_ipv4", o.Result.NextHopCount(targetnet.IPv4), "next_hops_ipv6", o.Result.NextHopCount(targetnet.IPv6),
			"conflicts", len(o.Result.Conflicts), "took", o.Took, "since_change", time.Since(o.Changed))
	}
	for _, c := range o.Result.Conflicts {
		a.log.Warn("conflict with foreign network configuration", "conflict", c)
	}
}

func (a *Agent) wake() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// Ready reports whether the pod's desired configuration is applied.
func (a *Agent) Ready() (bool, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var why []string
	switch {
	case !a.podSeen:
		why = append(why, fmt.Sprintf("pod %s/%s not read yet", a.namespace, a.name))
	case a.parseErr != nil:
		why = append(why, "annotation "+kube.AnnotationTargetNetwork+" is invalid: "+a.parseErr.Error())
	case !a.haveConfig && a.requireConfig:
		why = append(why, "no network configuration yet (annotation "+kube.AnnotationTargetNetwork+", written by the controller)")
	case a.outcome == nil || a.outcome.Generation != a.generation:
		why = append(why, fmt.Sprintf("network configuration generation %d not applied yet", a.generation))
	case a.outcome.Err != nil:
		why = append(why, "applying the network configuration failed: "+strings.ReplaceAll(a.outcome.Err.Error(), "\n", "; "))
	}
	if a.outcome != nil && len(a.outcome.Result.Conflicts) > 0 {
		why = append(why, "conflicts with foreign network configuration: "+strings.Join(a.outcome.Result.Conflicts, "; "))
	}
	return len(why) == 0, why
}

// status returns the status annotation value to write ("": remove it).
func (a *Agent) status() (string, bool) {
	a.mu.Lock()
	o, parseErr, haveConfig := a.outcome, a.parseErr, a.haveConfig
	a.mu.Unlock()
	if o == nil && parseErr == nil {
		return "", false // nothing applied yet: nothing to say
	}
	if o == nil {
		// Nothing applied by this container, and nothing will be until the
		// annotation is valid: say so, as the pod may still carry an
		// earlier container's status, ready.
		s := Status{Version: SchemaVersion, Errors: []string{"annotation " + kube.AnnotationTargetNetwork +
			" is invalid; nothing applied since this sidecar started, what an earlier one applied stays: " + parseErr.Error()}}
		return s.Marshal(), true
	}
	s := StatusOf(o.Generation, o.Result, o.Err)
	if parseErr != nil {
		s.Ready = false
		s.Errors = append(s.Errors, "annotation "+kube.AnnotationTargetNetwork+" is invalid, the last valid configuration stays: "+parseErr.Error())
	}
	if !haveConfig && parseErr == nil && len(s.Gateways) == 0 && len(s.Errors) == 0 {
		return "", true // nothing wanted, nothing left
	}
	s.Ready, _ = a.Ready()
	return s.Marshal(), true
}

// writeStatus keeps the pod's status annotation up to date until ctx ends.
func (a *Agent) writeStatus(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.kick:
		case <-retry.C:
		}
		value, known := a.status()
		a.mu.Lock()
		current, gone := a.onPod, a.podGone || !a.podSeen
		a.mu.Unlock()
		if !known || gone || value == current {
			continue
		}
		err := a.patch(ctx, value)
		a.metrics.ObserveStatusWrite(err)
		if err != nil {
			failures++
			wait := min(watchBackoff[0]<<min(failures-1, 10), watchBackoff[1])
			a.log.Warn("writing the status annotation failed; retrying", "err", err, "retry_in", wait)
			retry.Reset(wait)
			continue
		}
		failures = 0
		a.mu.Lock()
		a.onPod = value
		a.mu.Unlock()
	}
}

func (a *Agent) patch(ctx context.Context, value string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return PatchStatus(ctx, a.client, a.namespace, a.name, value)
}

type noMetrics struct{}

func (noMetrics) ObserveApply(targetnet.Outcome) {}
func (noMetrics) ObserveStatusWrite(error)       {}
