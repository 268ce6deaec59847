package targetpod

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"golang.org/x/sync/errgroup"

	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube"
)

// ErrNoNamespace is wrapped by a Configurer's error when the pod's network
// namespace is not there to configure (no ready sandbox: the pod is going
// away, or its sandbox is being re-created). It is not an apply failure:
// the PodAgent reports nothing (the status stays as it is), logs it once,
// and the loop tries again with its backoff, and at once when the pod
// changes.
var ErrNoNamespace = errors.New("the pod's network namespace is not available")

// StatusWriter writes value as the pod's status annotation, or removes the
// annotation when value is "" (PatchStatus for one pod). It bounds its own
// call (StatusWriteTimeout): ctx is the agent's, ended only when it stops.
type StatusWriter func(ctx context.Context, value string) error

// StatusWriteTimeout bounds one status write to the API server.
const StatusWriteTimeout = 10 * time.Second

// PodAgent is one agent's work on one pod, whoever delivers the pod's
// versions: it takes each version (Seen), applies the desired annotation
// with a targetnet.Loop over its Configurer when the pod is this agent's
// (refusal), and keeps the status annotation up to date through its
// StatusWriter. The sidecar's Agent feeds it from WatchPod; the node
// daemon (kube/targetnode) from its informer.
type PodAgent struct {
	id            string // Status.Agent
	mode          string // kube.TargetAgentSidecar or kube.TargetAgentNode
	write         StatusWriter
	loop          *targetnet.Loop
	log           *slog.Logger
	metrics       Metrics
	requireConfig bool
	loopOpts      []targetnet.LoopOption
	liveness      Liveness // nil: no BFD (WithLiveness)
	kick          chan struct{}

	mu            sync.Mutex
	runDone       <-chan struct{} // Run's context: outcomes after its end are not reported
	podSeen       bool
	podGone       bool
	refused       string // why the pod is not this agent's ("": it is)
	reportRefusal bool
	read          bool   // desired holds the annotation as last read
	desired       string // the desired annotation last read
	haveConfig    bool   // desired holds a valid configuration
	generation    int64  // its generation (0: none)
	parseErr      error
	setGen        int64 // what the loop was last given
	setNet        targetnet.Desired
	setLive       []Gateway               // the Gateways with Liveness of setGen
	looping       bool                    // the loop has the configuration set (not cleared)
	loopDown      map[string][]netip.Addr // the next hops marked down in what the loop was given, by Gateway
	outcome       *targetnet.Outcome
	noNamespace   error  // the last apply found no namespace (ErrNoNamespace)
	onPod         string // the status annotation on the pod as last seen or written
}

// AgentOption configures a PodAgent (and the sidecar's Agent).
type AgentOption func(*PodAgent)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) AgentOption { return func(a *PodAgent) { a.log = l } }

// WithMetrics sets where measurements go.
func WithMetrics(m Metrics) AgentOption { return func(a *PodAgent) { a.metrics = m } }

// WithRequireConfig sets whether the agent is ready only once the pod has
// a desired configuration (default true: a pod is not ready before its
// VIPs are in place).
func WithRequireConfig(b bool) AgentOption { return func(a *PodAgent) { a.requireConfig = b } }

// WithLoopOptions passes options to the apply loop (resync, backoff).
func WithLoopOptions(o ...targetnet.LoopOption) AgentOption {
	return func(a *PodAgent) { a.loopOpts = append(a.loopOpts, o...) }
}

// NewPodAgent returns the PodAgent of agent id (SidecarAgent or
// NodeAgent(node)) for one pod, applying with c and writing the status
// with write. It does nothing before Run and the first Seen.
func NewPodAgent(id string, c targetnet.Configurer, write StatusWriter, opts ...AgentOption) *PodAgent {
	a := &PodAgent{id: id, mode: kube.TargetAgentNode, write: write, log: slog.Default(), metrics: noMetrics{},
		requireConfig: true, kick: make(chan struct{}, 1)}
	if id == SidecarAgent {
		a.mode = kube.TargetAgentSidecar
	}
	for _, o := range opts {
		o(a)
	}
	a.loop = targetnet.NewLoop(c, a.applied, a.loopOpts...)
	return a
}

// Run applies and reports until ctx ends. What was applied stays in the
// namespace when it returns.
func (a *PodAgent) Run(ctx context.Context) error {
	a.mu.Lock()
	a.runDone = ctx.Done()
	a.mu.Unlock()
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return a.loop.Run(ctx) })
	g.Go(func() error { a.writeStatus(ctx); return nil })
	if a.liveness != nil {
		g.Go(func() error { a.watchDown(ctx.Done()); return nil })
	}
	return g.Wait()
}

// who names the agent in messages.
func (a *PodAgent) who() string {
	if a.mode == kube.TargetAgentSidecar {
		return "sidecar"
	}
	return "node daemon"
}

// Seen takes one version of the pod; nil: the pod object is gone (what is
// applied stays, for the connections draining). Safe for concurrent use.
func (a *PodAgent) Seen(pod *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.wake()
	a.podSeen = true
	if a.podGone = pod == nil; a.podGone {
		return
	}
	a.onPod = pod.Annotations[kube.AnnotationTargetNetworkStatus]
	if why, report := refusal(a.mode, pod); why != "" {
		if a.refused == "" {
			a.loop.Clear() // do not fight the agent the pod names
			a.looping = false
			left := "nothing applied by this " + a.who()
			if a.outcome != nil {
				left = fmt.Sprintf("what this %s applied (generation %d) stays in place, neither changed nor removed", a.who(), a.outcome.Generation)
			}
			a.log.Warn("this agent applies nothing in the pod", "why", why, "left", left)
		}
		if a.liveness != nil {
			a.liveness.Set(nil) // the pod's agent runs its BFD sessions
		}
		a.refused, a.reportRefusal, a.read = why, report, false
		return
	}
	if a.refused != "" {
		a.log.Info("the pod is this agent's again: applying its network configuration")
		a.refused = ""
	}
	value, set := pod.Annotations[kube.AnnotationTargetNetwork]
	if a.read && value == a.desired {
		if a.noNamespace != nil {
			a.setLoopNet() // the pod changed: its sandbox may be back
		}
		return
	}
	a.read, a.desired = true, value
	if !set {
		a.haveConfig, a.generation, a.parseErr = false, 0, nil
		a.setLoop(0, targetnet.Desired{}, nil) // nothing wanted: ours goes
		return
	}
	d, err := ParseDesired(value)
	if err != nil {
		a.parseErr = err
		a.log.Error("the pod's network configuration is invalid; what was applied stays", "annotation", kube.AnnotationTargetNetwork, "err", err)
		return
	}
	a.haveConfig, a.generation, a.parseErr = true, d.Generation, nil
	a.setLoop(d.Generation, d.Net(), withLiveness(d.Gateways))
}

func (a *PodAgent) setLoop(gen int64, d targetnet.Desired, live []Gateway) {
	a.setGen, a.setNet, a.setLive = gen, d, live
	a.setLoopNet()
}

// applied takes the outcome of an apply.
func (a *PodAgent) applied(o targetnet.Outcome) {
	a.mu.Lock()
	done := a.runDone
	a.mu.Unlock()
	select {
	case <-done:
		return // interrupted by the agent's end (its Configurer's context)
	default:
	}
	if errors.Is(o.Err, ErrNoNamespace) {
		a.mu.Lock()
		first := a.noNamespace == nil
		a.noNamespace = o.Err
		a.mu.Unlock()
		if first {
			a.log.Info("the pod's network namespace is not available; nothing applied, waiting for it", "err", o.Err)
		}
		return
	}
	a.metrics.ObserveApply(o)
	a.mu.Lock()
	prev := a.outcome
	a.outcome, a.noNamespace = &o, nil
	a.reportLiveness(o)
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

func (a *PodAgent) wake() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// Ready reports whether the pod's desired configuration is applied, and
// why not.
func (a *PodAgent) Ready() (bool, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var why []string
	switch {
	case !a.podSeen:
		why = append(why, "pod not read yet")
	case a.refused != "":
		why = append(why, a.refused)
	case a.parseErr != nil:
		why = append(why, "annotation "+kube.AnnotationTargetNetwork+" is invalid: "+a.parseErr.Error())
	case !a.haveConfig && a.requireConfig:
		why = append(why, "no network configuration yet (annotation "+kube.AnnotationTargetNetwork+", written by the controller)")
	case a.noNamespace != nil:
		why = append(why, a.noNamespace.Error())
	case a.outcome == nil || a.outcome.Generation != a.generation:
		why = append(why, fmt.Sprintf("network configuration generation %d not applied yet", a.generation))
	case a.outcome.Err != nil:
		why = append(why, "applying the network configuration failed: "+strings.ReplaceAll(a.outcome.Err.Error(), "\n", "; "))
	}
	if a.refused == "" && a.outcome != nil && len(a.outcome.Result.Conflicts) > 0 {
		why = append(why, "conflicts with foreign network configuration: "+strings.Join(a.outcome.Result.Conflicts, "; "))
	}
	return len(why) == 0, why
}
