package controller

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// Kind is the kind of object a key names.
type Kind string

// The kinds the controller reconciles.
const (
	KindGatewayClass  Kind = "GatewayClass"
	KindGateway       Kind = "Gateway"
	KindService       Kind = "Service"
	KindL34Route      Kind = "L34Route"
	KindGatewayRouter Kind = "GatewayRouter"
	// KindPod: the desired network configuration of a target pod.
	KindPod Kind = "Pod"
)

// Key names one object to reconcile (in the controller's namespace, or
// cluster-wide for a GatewayClass).
type Key struct {
	Kind Kind
	Name string
}

// errStale asks for a later retry without an Event: the cache is behind
// this replica's own writes.
var errStale = errors.New("cache older than the last write")

// staleRetry is how long a key waits when the cache is behind.
const staleRetry = 200 * time.Millisecond

// ReasonReconcileFailed is the Event reason of a failed reconcile.
const ReasonReconcileFailed = "ReconcileFailed"

// processNext reconciles one key; it returns false when the workers must
// stop.
func (c *Controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if ctx.Err() != nil {
		return false
	}
	start := time.Now()
	err := c.reconcil[key.Kind](ctx, key.Name)
	result := "success"
	switch {
	case err == nil:
		c.queue.Forget(key)
		c.events.resolved(c.object(key), ReasonReconcileFailed)
	case ctx.Err() != nil:
		return false
	case errors.Is(err, errStale):
		result = "stale"
		c.queue.AddAfter(key, staleRetry)
	case apierrors.IsConflict(err):
		result = "conflict"
		c.log.Debug("write conflict; retrying", "kind", key.Kind, "name", key.Name, "err", err)
		c.queue.AddRateLimited(key)
	default:
		result = "error"
		c.log.Warn("reconcile failed; retrying", "kind", key.Kind, "name", key.Name, "err", err)
		c.events.warn(c.object(key), ReasonReconcileFailed, err.Error())
		c.queue.AddRateLimited(key)
	}
	c.metrics.ObserveReconcile(string(key.Kind), result, time.Since(start))
	return true
}

// object returns the cached object a key names, nil when gone.
func (c *Controller) object(k Key) runtime.Object {
	var obj runtime.Object
	var err error
	switch k.Kind {
	case KindGatewayClass:
		obj, err = c.inf.classes.Get(k.Name)
	case KindGateway:
		obj, err = c.inf.gateways.Get(k.Name)
	case KindService:
		obj, err = c.inf.services.Get(k.Name)
	case KindL34Route:
		obj, err = getCustom(c.inf.routes, c.namespace, k.Name)
	case KindGatewayRouter:
		obj, err = getCustom(c.inf.routers, c.namespace, k.Name)
	case KindPod:
		obj, err = c.inf.pods.Get(k.Name)
	}
	if err != nil {
		return nil
	}
	return obj
}
