package targetnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// cleanupAttempts bounds the applies of an empty configuration to one pod
// in cleanup mode (a failure is retried with backoff, then reported).
const cleanupAttempts = 5

// cleanupReport is the state of a Cleanup, for Ready.
type cleanupReport struct {
	done   bool
	failed []string
}

func (r *cleanupReport) ready() (bool, []string) {
	switch {
	case !r.done:
		return false, []string{"cleaning up"}
	case len(r.failed) > 0:
		return false, append([]string{"clean-up failed in some pods (the log says why)"}, r.failed...)
	}
	return true, nil
}

// Cleanup removes everything of sllbrd's from the network namespace of
// every node-mode pod of the node that has a desired or status annotation
// (an empty configuration applied, the namespace opened as in Run), and
// every status annotation a node daemon wrote on a pod of the node (where
// it applied, only once the namespace is clean: a status left says what
// the kernel still holds). It applies nothing in pods marked for the
// sidecar, with an unknown mark or hostNetwork, logs one line per pod, and
// then waits for ctx: Ready says when it is done and whether a pod failed.
// It returns when ctx ends.
func (d *Daemon) Cleanup(ctx context.Context) error {
	d.mu.Lock()
	d.cleanup = &cleanupReport{}
	d.mu.Unlock()
	pods, err := d.listPods(ctx)
	if err != nil {
		return nil // ctx ended
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	count := map[string]int{}
	for _, pod := range pods {
		if pod.Spec.NodeName != d.node {
			continue
		}
		wg.Go(func() {
			log := d.log.With("pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID)
			result, err := d.cleanPod(ctx, &pod, log)
			mu.Lock()
			defer mu.Unlock()
			count[result]++
			if err != nil {
				d.mu.Lock()
				d.cleanup.failed = append(d.cleanup.failed, fmt.Sprintf("pod %s/%s: %v", pod.Namespace, pod.Name, err))
				d.mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	d.mu.Lock()
	d.cleanup.done = true
	d.mu.Unlock()
	d.log.Info("clean-up done; idle until stopped", "node", d.node, "pods_cleaned", count["cleaned"],
		"pods_left_alone", count["left alone"], "pods_failed", count["failed"], "pods_without_annotations", count["none"])
	<-ctx.Done()
	return nil
}

// noAnnotations is applyNot's answer for a pod that is no target.
const noAnnotations = "no target network annotation"

// applyNot says why Cleanup applies nothing in pod ("": it applies the
// empty configuration).
func applyNot(pod *corev1.Pod) string {
	_, desired := pod.Annotations[kube.AnnotationTargetNetwork]
	_, status := pod.Annotations[kube.AnnotationTargetNetworkStatus]
	mode, err := targetpod.AgentMode(pod)
	switch {
	case !desired && !status:
		return noAnnotations
	case err != nil:
		return err.Error()
	case mode != kube.TargetAgentNode:
		return "marked for the sidecar"
	case pod.Spec.HostNetwork:
		return "hostNetwork: never configured"
	}
	return ""
}

// cleanPod removes what is ours from pod's namespace, then a node daemon's
// status; result is "cleaned", "left alone", "failed" or "none" (no
// target: not logged).
func (d *Daemon) cleanPod(ctx context.Context, pod *corev1.Pod, log *slog.Logger) (result string, err error) {
	why := applyNot(pod)
	kernel := "nothing applied: " + why
	if why == "" {
		if kernel, err = d.cleanNamespace(ctx, pod); err != nil {
			log.Warn("clean-up failed; the status annotation stays", "err", err, "attempts", cleanupAttempts)
			return "failed", err
		}
	}
	status, err := d.removeNodeStatus(ctx, pod)
	if err != nil {
		log.Warn("clean-up: removing the status annotation failed", "kernel", kernel, "err", err)
		return "failed", err
	}
	switch {
	case why == noAnnotations:
		return "none", nil
	case why == "" || status == statusRemoved:
		log.Info("clean-up: pod cleaned", "kernel", kernel, "status", status)
		return "cleaned", nil
	}
	log.Info("clean-up: pod left alone", "kernel", kernel, "status", status)
	return "left alone", nil
}

const statusRemoved = "the node daemon's status annotation removed"

// removeNodeStatus removes pod's status annotation if a node daemon wrote
// it, and says what it did.
func (d *Daemon) removeNodeStatus(ctx context.Context, pod *corev1.Pod) (string, error) {
	v, ok := pod.Annotations[kube.AnnotationTargetNetworkStatus]
	if !ok {
		return "no status annotation", nil
	}
	if s, err := targetpod.ParseStatus(v); err != nil || !targetpod.IsNodeAgent(s.Agent) {
		return "status annotation of another agent left", nil
	}
	if err := d.limits.statusWriter(d.client, pod.Namespace, pod.Name, pod.UID)(ctx, ""); err != nil {
		return "", fmt.Errorf("remove the status annotation: %w", err)
	}
	return statusRemoved, nil
}

// cleanNamespace applies the empty configuration to pod's namespace, a
// few times if it fails, and says what it found.
func (d *Daemon) cleanNamespace(ctx context.Context, pod *corev1.Pod) (string, error) {
	ns := &podNamespace{ctx: ctx, d: d, uid: string(pod.UID)}
	var err error
	for attempt := 1; ; attempt++ {
		if _, err = ns.Apply(targetnet.Desired{}); err == nil || errors.Is(err, targetpod.ErrNoNamespace) ||
			attempt == cleanupAttempts || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond << attempt):
		}
	}
	switch {
	case errors.Is(err, targetpod.ErrNoNamespace):
		return "no network namespace (no ready sandbox): nothing to clean", nil
	case err != nil:
		return "", err
	}
	return "nothing of sllbrd's left in its network namespace", nil
}

// listPods lists the node's pods (the verb list, by field selector),
// retrying until ctx ends.
func (d *Daemon) listPods(ctx context.Context) ([]corev1.Pod, error) {
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", d.node).String(), Limit: 500}
	for failures := 0; ; {
		var pods []corev1.Pod
		var err error
		for opts.Continue = ""; ; {
			var l *corev1.PodList
			if l, err = d.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts); err != nil {
				break
			}
			pods = append(pods, l.Items...)
			if opts.Continue = l.Continue; opts.Continue == "" {
				return pods, nil
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		failures++
		wait := min(500*time.Millisecond<<min(failures-1, 6), 30*time.Second)
		d.log.Warn("clean-up: listing the node's pods failed; retrying", "err", strings.TrimSpace(err.Error()), "retry_in", wait)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}
