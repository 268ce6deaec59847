package targetpod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/apigate"
)

// watchBackoff bounds the wait before a failed get or watch is retried.
var watchBackoff = [2]time.Duration{500 * time.Millisecond, 30 * time.Second}

// shortWatchBackoff bounds it after a watch that ended at once: each
// attempt then gets the pod, so the pod is read at least this often.
const shortWatchBackoff = 2 * time.Second

var errWatchEndedAtOnce = errors.New("the watch ended at once")

// WatchPod follows one pod with the verbs get and watch only: a get, then a
// watch filtered by metadata.name from the version read (resumed from the
// last version seen when it ends; a new get when that version is too old).
// fn receives every version seen, nil while the pod does not exist. It
// returns when ctx ends.
func WatchPod(ctx context.Context, c kubernetes.Interface, namespace, name string, log *slog.Logger, fn func(*corev1.Pod)) error {
	pods := c.CoreV1().Pods(namespace)
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	// After a failure, wait for the API server to answer before backing
	// off: its outage counts as one failure, not one per attempt, so the
	// pod is followed again within a probe period of its return.
	gate := apigate.New(apigate.Readyz(c.Discovery()), apigate.DefaultPeriod)
	rv, failures := "", 0
	for ctx.Err() == nil {
		var err error
		if rv == "" {
			rv, err = getPod(ctx, c, namespace, name, fn)
		}
		if err == nil {
			var w watch.Interface
			timeout := int64(300 + rand.IntN(300)) // spread the servers' load, as informers do
			w, err = pods.Watch(ctx, metav1.ListOptions{FieldSelector: selector, ResourceVersion: rv,
				AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
			if err == nil {
				started := time.Now()
				rv, err = follow(w, rv, fn)
				w.Stop()
				if err == nil && time.Since(started) < time.Second && ctx.Err() == nil {
					// A server whose watch cache is not ready (after its
					// restart) ends watches at once but answers gets: the
					// next attempt reads the pod afresh, so its changes
					// arrive meanwhile.
					err, rv = errWatchEndedAtOnce, ""
				}
			}
		}
		if err == nil {
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			break
		}
		failures++
		gate.Failed()
		waiting := time.Now()
		if gate.Wait(ctx) != nil {
			break
		}
		if time.Since(waiting) >= apigate.DefaultPeriod { // the server did not answer: one failure
			failures = 1
		}
		wait := min(watchBackoff[0]<<min(failures-1, 10), watchBackoff[1])
		if errors.Is(err, errWatchEndedAtOnce) {
			wait = min(wait, shortWatchBackoff)
		}
		log.Warn("watching the own pod failed; retrying", "pod", namespace+"/"+name, "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	return nil
}

// getPod reads the pod, hands it to fn, and returns the version to watch
// from ("" when it does not exist: the watch then starts at the newest
// version and reports the pod when it appears).
func getPod(ctx context.Context, c kubernetes.Interface, namespace, name string, fn func(*corev1.Pod)) (string, error) {
	pod, err := c.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		fn(nil)
		return "", nil
	case err != nil:
		return "", fmt.Errorf("get pod %s/%s: %w", namespace, name, err)
	}
	fn(pod)
	return pod.ResourceVersion, nil
}

// follow hands the watch's pods to fn until it ends and returns the last
// version seen; "" asks for a new get (the version is gone).
func follow(w watch.Interface, rv string, fn func(*corev1.Pod)) (string, error) {
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				return rv, fmt.Errorf("watch: %T instead of a pod", ev.Object)
			}
			rv = pod.ResourceVersion
			switch ev.Type {
			case watch.Added, watch.Modified:
				fn(pod)
			case watch.Deleted:
				fn(nil)
			}
		case watch.Error:
			err := apierrors.FromObject(ev.Object)
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				return "", nil
			}
			return rv, fmt.Errorf("watch: %w", err)
		}
	}
	return rv, nil
}

// PatchStatus writes value as the pod's status annotation, or removes the
// annotation when value is "" (a JSON merge patch of that key only; the
// verb patch). A uid other than "" is a precondition: the patch carries it
// unchanged, and the API server refuses it (UID immutable) when the pod of
// that name is another one, e.g. re-created by a StatefulSet.
func PatchStatus(ctx context.Context, c kubernetes.Interface, namespace, name string, uid types.UID, value string) error {
	var v any = value
	if value == "" {
		v = nil // null removes the key
	}
	meta := map[string]any{"annotations": map[string]any{kube.AnnotationTargetNetworkStatus: v}}
	if uid != "" {
		meta["uid"] = uid
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	if _, err := c.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch the status annotation of pod %s/%s: %w", namespace, name, err)
	}
	return nil
}
