package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"

	"github.com/sllbrd/sllbrd/kube/apiserver"
	"github.com/sllbrd/sllbrd/model"
)

// startLiveness creates d's endpoint liveness checks: the prober, whose
// sockets open now (an SLLBR that cannot probe does not start), and where
// transitions are reported: Kubernetes Events regarding the Service with an
// API server, log lines without one (--manifests). The configuration source
// and the applier are wired to it; d.run runs it.
func (d *daemon) startLiveness() error {
	instance, err := os.Hostname() // the pod's name in Kubernetes
	if err != nil {
		instance = "(unknown)"
	}
	sink := logSink(d.log)
	if d.cfg.manifests == "" {
		if sink, err = d.kubeEvents(); err != nil {
			return fmt.Errorf("endpoint liveness events: %w", err)
		}
	}
	d.livenessEvents = newLivenessEvents(instance, time.Now, sink)
	if d.liveness, err = newEndpointLiveness(d.log, d.loop.SetDead, d.livenessEvents); err != nil {
		return err
	}
	d.source.onState = func(st *model.State) {
		// The BFD probes run on the Uplink's BFD server (the SLLBR's only
		// one), and the Uplink starts after the liveness checks
		// (startRouting): they are bound at the first configuration,
		// which comes once the daemon runs.
		if d.uplink != nil {
			d.liveness.bfd.bind(d.uplink.BFD(), d.uplink.HandleOtherSessions)
		}
		d.liveness.setState(st)
	}
	d.applier.moved = d.liveness.observeMoves
	return nil
}

// kubeEvents starts an Event recorder on the API server (stopped by
// d.close) and returns the sink that writes liveness Events with it.
func (d *daemon) kubeEvents() (func(context.Context, livenessEvent), error) {
	rc, err := restConfig(d.cfg.kubeconfig)
	if err != nil {
		return nil, err
	}
	ns, err := namespace(d.cfg.namespace)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	rec, stop, err := apiserver.StartEventRecorder(context.Background(), client, apiserver.ReportingController)
	if err != nil {
		return nil, err
	}
	d.stopEvents = stop
	return kubeEventSink(rec, client, ns, d.log), nil
}

// kubeEventSink records each Event regarding its Service, read from the API
// server for its UID (kubectl describe finds Events by it), and related to
// the endpoint: the EndpointSlice listing the address, with the endpoint's
// field path. The client-go recorder makes Events with the same regarding
// and related objects, reason and action one series (a count on the first
// Event) for minutes, so without the endpoint as related object the second
// endpoint of a Service to die would only add to the first one's count. A
// Service or slice that cannot be read is logged and the Event written
// without it.
func kubeEventSink(rec events.EventRecorder, client kubernetes.Interface, namespace string, log *slog.Logger) func(context.Context, livenessEvent) {
	return func(ctx context.Context, ev livenessEvent) {
		readCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var regarding, related runtime.Object
		svc, err := client.CoreV1().Services(namespace).Get(readCtx, ev.service, metav1.GetOptions{})
		if err != nil {
			log.Warn("endpoint liveness: reading the Service for its Event; the Event names it without its UID", "service", ev.service, "err", err)
			regarding = &corev1.ObjectReference{APIVersion: "v1", Kind: "Service", Namespace: namespace, Name: ev.service}
		} else {
			regarding = svc
		}
		ref, err := endpointOf(readCtx, client, namespace, ev.service, ev.addr)
		switch {
		case err != nil:
			log.Warn("endpoint liveness: reading the EndpointSlices for an Event; the Event is written without its endpoint", "service", ev.service, "err", err)
		case ref != nil:
			related = ref
		}
		typ := corev1.EventTypeNormal
		if ev.warning {
			typ = corev1.EventTypeWarning
		}
		rec.Eventf(regarding, related, typ, ev.reason, eventActionProbe, "%s", ev.note)
	}
}

// endpointOf returns a reference to the endpoint of service's EndpointSlices
// that lists addr (nil: none does). They are the slices the SLLBR balances
// to, selected as kube/translate selects them (by the service-name label,
// the seed's contract): the Event points at what the SLLBR programmed.
func endpointOf(ctx context.Context, client kubernetes.Interface, namespace, service string, addr netip.Addr) (*corev1.ObjectReference, error) {
	list, err := client.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
	if err != nil {
		return nil, err
	}
	for _, s := range list.Items {
		for i, ep := range s.Endpoints {
			for _, a := range ep.Addresses {
				if p, err := netip.ParseAddr(a); err == nil && p.Unmap() == addr {
					return &corev1.ObjectReference{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice", Namespace: s.Namespace,
						Name: s.Name, UID: s.UID, FieldPath: fmt.Sprintf("endpoints[%d]", i)}, nil
				}
			}
		}
	}
	return nil, nil
}
