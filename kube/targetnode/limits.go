package targetnode

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// The default bounds of the daemon's work (WithLimits). A node starting
// with 110 pods to configure runs at most DefaultApplies applies at a time
// (each is a runtime call and a few netlink dumps: milliseconds, and two
// cores are shared with the pods), and writes their statuses at
// DefaultWritesPerSecond after a burst of DefaultWriteBurst, at most
// DefaultWritesInFlight at a time: 110 statuses in about 10 s, and never
// more than 10 writes a second from one node to the API server, which
// every node's daemon shares. A restarted daemon writes nothing (the
// statuses are there already), so the bound matters at install and after
// mass changes only.
const (
	DefaultApplies         = 4
	DefaultWritesPerSecond = 10
	DefaultWriteBurst      = 10
	DefaultWritesInFlight  = 4
)

// limits bounds the applies and status writes of every pod's agent.
type limits struct {
	applies chan struct{}
	writes  chan struct{}
	rate    flowcontrol.RateLimiter
}

func newLimits(applies, inFlight int, perSecond float32, burst int) *limits {
	return &limits{applies: make(chan struct{}, applies), writes: make(chan struct{}, inFlight),
		rate: flowcontrol.NewTokenBucketRateLimiter(perSecond, burst)}
}

// acquire takes a slot of sem; release gives it back.
func acquire(ctx context.Context, sem chan struct{}) (release func(), err error) {
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// apply takes an apply slot.
func (l *limits) apply(ctx context.Context) (func(), error) { return acquire(ctx, l.applies) }

// statusWriter is the StatusWriter of pod namespace/name with uid: a merge
// patch of the status annotation (refused if a pod of that name with
// another UID took its place), after the rate limit and a write slot; the
// timeout bounds the patch itself, not the wait.
func (l *limits) statusWriter(c kubernetes.Interface, namespace, name string, uid types.UID) targetpod.StatusWriter {
	return func(ctx context.Context, value string) error {
		if err := l.rate.Wait(ctx); err != nil {
			return err
		}
		release, err := acquire(ctx, l.writes)
		if err != nil {
			return err
		}
		defer release()
		ctx, cancel := context.WithTimeout(ctx, targetpod.StatusWriteTimeout)
		defer cancel()
		return targetpod.PatchStatus(ctx, c, namespace, name, uid, value)
	}
}
