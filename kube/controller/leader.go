package controller

import (
	"context"
	"errors"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLeadershipLost ends Run when the Lease could not be renewed.
var ErrLeadershipLost = errors.New("controller: lost the leader Lease")

// elect campaigns for the Lease and leads while holding it. The workers
// stop before the Lease is released (ReleaseOnCancel runs when the
// elector's own context ends, which happens only after lead returned), so
// no write of this replica can follow the release.
func (c *Controller) elect(ctx context.Context) error {
	le := c.election
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: c.namespace, Name: le.LeaseName},
		Client:     c.kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: le.Identity},
	}
	leading := make(chan context.Context, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: le.LeaseName, ReleaseOnCancel: true,
		LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) { leading <- lctx },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return err
	}
	electCtx, stopElecting := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElecting()
	done := make(chan struct{})
	go func() {
		defer close(done)
		elector.Run(electCtx)
	}()
	c.log.Info("campaigning for the Lease", "lease", le.LeaseName, "identity", le.Identity)
	select {
	case <-ctx.Done():
		stopElecting()
		<-done
		return nil
	case lctx := <-leading:
		acquired := time.Now()
		c.log.Info("leading", "lease", le.LeaseName, "identity", le.Identity)
		wctx, stop := context.WithCancel(ctx)
		unlink := context.AfterFunc(lctx, stop)
		c.lead(wctx)
		unlink()
		stop()
		lost := lctx.Err() != nil && ctx.Err() == nil
		stopElecting() // releases the Lease
		<-done
		c.log.Info("stopped leading", "lease", le.LeaseName, "led", time.Since(acquired).Round(time.Millisecond).String(), "lost", lost)
		if lost {
			return ErrLeadershipLost
		}
		return nil
	}
}

// lead runs the workers until ctx ends and waits for them to finish their
// current key.
func (c *Controller) lead(ctx context.Context) {
	c.leading.Store(true)
	c.metrics.SetLeader(true)
	defer func() {
		c.leading.Store(false)
		c.metrics.SetLeader(false)
	}()
	c.enqueueAll()
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown() // workers finish the key they hold and take no other
	wg.Wait()
}
