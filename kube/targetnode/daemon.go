package targetnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/sllbrd/sllbrd/internal/cri"
	"github.com/sllbrd/sllbrd/internal/targetbfd"
	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube/apigate"
	"github.com/sllbrd/sllbrd/kube/informer"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// Daemon is `sllbrd target --node`: the agent of every pod of one node
// that is not marked for the sidecar (package documentation).
type Daemon struct {
	client  kubernetes.Interface
	node    string
	netns   NetNS
	log     *slog.Logger
	metrics *nodeMetrics
	resync  time.Duration
	probe   time.Duration
	limits  *limits
	own     nsID
	bfd     *targetbfd.Counters // of every pod's BFD Runner (BFDStats)

	unavailable atomic.Uint64 // applies skipped: no network namespace (NamespaceUnavailable)

	mu       sync.Mutex
	ctx      context.Context // Run's; the pods' agents run under it
	synced   func() bool
	runtime  error // the last runtime probe's failure (nil: it answers)
	probed   bool
	pods     map[types.UID]*worker
	stopping map[types.UID]chan struct{}
	workers  sync.WaitGroup
	cleanup  *cleanupReport
}

// worker runs the agent of one pod.
type worker struct {
	agent   *targetpod.PodAgent
	ns      *podNamespace // the agent's Configurer
	bfd     *podBFD       // the agent's Liveness
	refused bool          // the pod as last seen is not configured (refuses): under Daemon.mu
	cancel  context.CancelFunc
	done    chan struct{}
}

// Option configures a Daemon.
type Option func(*Daemon)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(d *Daemon) { d.log = l } }

// WithMetrics sets where the applies and status writes of every pod go
// (internal/metrics.Target; see nodeMetrics for what its gauges mean for
// a node). The node's own measurements are read from the daemon
// (PodStates, RuntimeUp, NamespaceUnavailable: internal/metrics.TargetNode).
func WithMetrics(m targetpod.Metrics) Option {
	return func(d *Daemon) { d.metrics = newNodeMetrics(m) }
}

// WithResync sets how often each pod's configuration is applied again to
// repair what someone changed (default 30 s; 0: never).
func WithResync(p time.Duration) Option { return func(d *Daemon) { d.resync = p } }

// WithLimits bounds the applies running at once, the status writes in
// flight, and their rate (per second, after a burst); see DefaultApplies.
func WithLimits(applies, writesInFlight int, writesPerSecond float32, writeBurst int) Option {
	return func(d *Daemon) { d.limits = newLimits(applies, writesInFlight, writesPerSecond, writeBurst) }
}

// runtimeProbeInterval is how often Ready's view of the runtime is renewed.
const runtimeProbeInterval = 10 * time.Second

// New returns the daemon of node, finding pods' namespaces with netns.
// The caller has checked the kernel once (targetnet.NewNetlinkKernel does):
// the daemon opens each pod's namespace without probing it.
func New(c kubernetes.Interface, node string, netns NetNS, opts ...Option) (*Daemon, error) {
	if node == "" {
		return nil, errors.New("targetnode: no node name")
	}
	own, err := ownNetNS()
	if err != nil {
		return nil, err
	}
	d := &Daemon{client: c, node: node, netns: netns, log: slog.Default(), metrics: newNodeMetrics(noMetrics{}),
		resync: 30 * time.Second, probe: runtimeProbeInterval, own: own, bfd: targetbfd.NewCounters(),
		limits: newLimits(DefaultApplies, DefaultWritesInFlight, DefaultWritesPerSecond, DefaultWriteBurst),
		pods:   map[types.UID]*worker{}, stopping: map[types.UID]chan struct{}{}}
	for _, o := range opts {
		o(d)
	}
	return d, nil
}

// Agent is the name the daemon writes into Status.Agent.
func (d *Daemon) Agent() string { return targetpod.NodeAgent(d.node) }

// informer is the one informer of the daemon: the pods of its node, by a
// field selector (the verbs list and watch), each reduced to what the
// daemon reads. It lists and watches through a gate (kube/apigate), and
// relists as soon as a restarted API server answers (kube/informer).
func (d *Daemon) informer() *informer.Informer {
	gate := apigate.New(apigate.Readyz(d.client.Discovery()), apigate.DefaultPeriod)
	pods, onNode := d.client.CoreV1().Pods(metav1.NamespaceAll), fields.OneTermEqualSelector("spec.nodeName", d.node).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = onNode
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = onNode
			return pods.Watch(ctx, o)
		},
	}
	// The client says whether it can stream a watch-list (fakes cannot).
	return informer.New(gate.Wrap(cache.ToListerWatcherWithContext(cache.ToListWatcherWithWatchListSemantics(lw, d.client))), &corev1.Pod{}, informer.Options{
		Transform: slim,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    d.onPod,
			UpdateFunc: func(_, obj any) { d.onPod(obj) },
			DeleteFunc: d.onDelete,
		},
		OnError: func(err error) { d.log.Debug("API server list/watch of the node's pods failed", "err", err) },
	})
}

// Run applies the desired configuration of the node's pods and reports
// it until ctx ends; what was applied stays.
func (d *Daemon) Run(ctx context.Context) error {
	inf := d.informer()
	d.mu.Lock()
	d.ctx, d.synced = ctx, inf.HasSynced
	d.mu.Unlock()
	d.log.Info("following the pods of the node", "node", d.node, "agent", d.Agent(), "resync", d.resync)
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	wg.Go(func() { d.probeRuntime(ctx) })
	wg.Wait()
	d.mu.Lock()
	for uid := range d.pods {
		d.stopLocked(uid)
	}
	d.mu.Unlock()
	d.workers.Wait()
	return nil
}

// probeRuntime asks the runtime every probe interval whether it answers:
// a pod UID no pod has must come back as cri.ErrNoSandbox.
func (d *Daemon) probeRuntime(ctx context.Context) {
	const nobody = "00000000-0000-0000-0000-000000000000"
	for {
		_, err := d.netns.PodNetNS(ctx, nobody)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, cri.ErrNoSandbox) {
			err = nil
		} else if err == nil {
			err = errors.New("the runtime named a sandbox for a pod UID no pod has")
		}
		d.mu.Lock()
		was, probed := d.runtime, d.probed
		d.runtime, d.probed = err, true
		d.mu.Unlock()
		switch {
		case err != nil && (was == nil || !probed):
			d.log.Warn("the container runtime does not answer", "err", err)
		case err == nil && (was != nil || !probed):
			d.log.Info("the container runtime answers")
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(d.probe):
		}
	}
}

// Ready reports whether the daemon has listed its node's pods and the
// container runtime answers; in cleanup mode, whether the clean-up is
// done and nothing failed.
func (d *Daemon) Ready() (bool, []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cleanup != nil {
		return d.cleanup.ready()
	}
	var why []string
	if d.synced == nil || !d.synced() {
		why = append(why, fmt.Sprintf("the pods of node %s are not listed yet", d.node))
	}
	switch {
	case !d.probed:
		why = append(why, "the container runtime not asked yet")
	case d.runtime != nil:
		why = append(why, "the container runtime does not answer: "+d.runtime.Error())
	}
	return len(why) == 0, why
}

type noMetrics struct{}

func (noMetrics) ObserveApply(targetnet.Outcome) {}
func (noMetrics) ObserveStatusWrite(error)       {}
