package targetnode

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// slim keeps of a pod what the daemon reads, so that the informer's cache
// of up to a node's pods stays small: identity, the three annotations of
// the target contract, the node, hostNetwork and the phase.
func slim(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // a tombstone: made from the cache, slim already
	}
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion,
			DeletionTimestamp: p.DeletionTimestamp},
		Spec:   corev1.PodSpec{NodeName: p.Spec.NodeName, HostNetwork: p.Spec.HostNetwork},
		Status: corev1.PodStatus{Phase: p.Status.Phase},
	}
	for _, k := range []string{kube.AnnotationTargetNetwork, kube.AnnotationTargetNetworkStatus, kube.AnnotationTargetAgent} {
		if v, ok := p.Annotations[k]; ok {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	return out, nil
}

// wanted reports whether the daemon runs an agent for pod: one of its
// node, with a desired configuration or a status annotation (something to
// apply, remove or report), not finished (its sandbox is gone for good),
// and not marked for the sidecar (whose pod it leaves alone, with what it
// applied before the mark). An unknown mark or hostNetwork gets an agent
// that applies nothing and says why.
func (d *Daemon) wanted(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != d.node || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	_, desired := pod.Annotations[kube.AnnotationTargetNetwork]
	_, status := pod.Annotations[kube.AnnotationTargetNetworkStatus]
	mode, err := targetpod.AgentMode(pod)
	return (desired || status) && (err != nil || mode == kube.TargetAgentNode)
}

// onPod takes one version of a pod from the informer (one goroutine).
func (d *Daemon) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	w := d.pods[pod.UID]
	switch {
	case !d.wanted(pod):
		if w != nil {
			d.log.Info("no longer following the pod; what was applied stays", "pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID)
			d.stopLocked(pod.UID)
		}
		return
	case w == nil:
		w = d.startLocked(pod)
	}
	w.refused = refuses(pod)
	w.agent.Seen(pod)
}

// onDelete: the pod object is gone; its agent stops, what it applied stays
// (the namespace goes with the pod's sandbox).
func (d *Daemon) onDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopLocked(pod.UID)
}

func (d *Daemon) startLocked(pod *corev1.Pod) *worker {
	ctx, cancel := context.WithCancel(d.ctx)
	log := d.log.With("pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID)
	ns := &podNamespace{ctx: ctx, d: d, uid: string(pod.UID)}
	ns.bfd = newPodBFD(d, ns, log)
	agent := targetpod.NewPodAgent(d.Agent(), ns,
		d.limits.statusWriter(d.client, pod.Namespace, pod.Name, pod.UID),
		targetpod.WithLogger(log), targetpod.WithMetrics(d.metrics.forPod(pod.UID)),
		targetpod.WithLoopOptions(targetnet.WithResync(d.resync)), targetpod.WithLiveness(ns.bfd))
	w := &worker{agent: agent, ns: ns, bfd: ns.bfd, cancel: cancel, done: make(chan struct{})}
	d.pods[pod.UID] = w
	prev := d.stopping[pod.UID]
	d.workers.Add(1)
	go func() {
		defer d.workers.Done()
		defer close(w.done)
		if prev != nil { // the pod's previous agent may be finishing an apply
			select {
			case <-prev:
			case <-ctx.Done():
				return
			}
		}
		log.Debug("following the pod")
		var bfd sync.WaitGroup
		bfd.Go(func() { ns.bfd.run(ctx) })
		if err := agent.Run(ctx); err != nil {
			log.Error("the pod's agent stopped", "err", err)
		}
		bfd.Wait() // its sessions AdminDown, its thread gone
	}()
	return w
}

// stopLocked stops the agent of pod uid, if any.
func (d *Daemon) stopLocked(uid types.UID) {
	w, ok := d.pods[uid]
	if !ok {
		return
	}
	delete(d.pods, uid)
	w.cancel()
	d.stopping[uid] = w.done
	d.metrics.forget(uid)
	go func() {
		<-w.done
		d.mu.Lock()
		if d.stopping[uid] == w.done {
			delete(d.stopping, uid)
		}
		d.mu.Unlock()
	}()
}
