package apiserver

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	gatewayscheme "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/scheme"

	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/translate"
)

// Event reasons, by the kind of the offending object.
const (
	ReasonInvalidGateway            = "InvalidGateway"
	ReasonInvalidL34Route           = "InvalidL34Route"
	ReasonInvalidService            = "InvalidService"
	ReasonInvalidGatewayRouter      = "InvalidGatewayRouter"
	ReasonInvalidEndpointIdentifier = "InvalidEndpointIdentifier"
	ReasonInvalidEndpoint           = "InvalidEndpoint"
)

// eventAction is the events.k8s.io action of sllbrd's Events.
const eventAction = "Translate"

// maxNote is the longest note the API server accepts in an Event.
const maxNote = 1024

// recorder is the part of events.EventRecorder the reporter uses.
type recorder interface {
	Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// startEvents starts an events.k8s.io/v1 broadcaster writing to the API
// server and returns the reporter that feeds it and its stop function.
func (s *Source) startEvents(ctx context.Context) (*problemReporter, func(), error) {
	rec, stop, err := StartEventRecorder(ctx, s.kube, ReportingController)
	if err != nil {
		return nil, nil, fmt.Errorf("apiserver: %w", err)
	}
	return newProblemReporter(rec), stop, nil
}

// StartEventRecorder starts an events.k8s.io/v1 broadcaster writing to the
// API server as component, for events about core, Gateway API and sllbrd
// objects, and returns its recorder and stop function.
func StartEventRecorder(ctx context.Context, client kubernetes.Interface, component string) (events.EventRecorder, func(), error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, gatewayscheme.AddToScheme, v1alpha1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, nil, fmt.Errorf("events scheme: %w", err)
		}
	}
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, nil, fmt.Errorf("events: %w", err)
	}
	return b.NewRecorder(scheme, component), b.Shutdown, nil
}

// problemReporter turns translator Problems into Warning Events: one Event
// per object for the problems that were not present at the previous report.
type problemReporter struct {
	rec  recorder
	seen map[translate.Problem]bool
}

func newProblemReporter(rec recorder) *problemReporter {
	return &problemReporter{rec: rec, seen: map[translate.Problem]bool{}}
}

// objectKey names one object a Problem is about.
type objectKey struct{ kind, namespace, name string }

// report records an Event for each object with new problems; problems that
// were already reported and persist are not reported again.
func (r *problemReporter) report(snap translate.Snapshot, problems []translate.Problem) {
	next := make(map[translate.Problem]bool, len(problems))
	var order []objectKey
	fresh := map[objectKey][]translate.Problem{}
	for _, p := range problems {
		if next[p] {
			continue
		}
		next[p] = true
		if r.seen[p] {
			continue
		}
		k := objectKey{p.Kind, p.Namespace, p.Name}
		if _, ok := fresh[k]; !ok {
			order = append(order, k)
		}
		fresh[k] = append(fresh[k], p)
	}
	r.seen = next
	for _, k := range order {
		obj := findObject(snap, k)
		if obj == nil {
			continue
		}
		ps := fresh[k]
		r.rec.Eventf(obj, nil, corev1.EventTypeWarning, reasonOf(ps), eventAction, "%s", noteOf(ps))
	}
}

// reasonOf names a set of problems of one object.
func reasonOf(ps []translate.Problem) string {
	switch ps[0].Kind {
	case translate.KindGateway:
		return ReasonInvalidGateway
	case translate.KindL34Route:
		return ReasonInvalidL34Route
	case translate.KindService:
		return ReasonInvalidService
	case translate.KindGatewayRouter:
		return ReasonInvalidGatewayRouter
	}
	for _, p := range ps {
		if strings.Contains(p.Message, "identifier") || strings.Contains(p.Field, "identifier") {
			return ReasonInvalidEndpointIdentifier
		}
	}
	return ReasonInvalidEndpoint
}

// noteOf joins the problems as "field: message; ..." within maxNote bytes.
func noteOf(ps []translate.Problem) string {
	var b strings.Builder
	for i, p := range ps {
		part := p.Message
		if p.Field != "" {
			part = p.Field + ": " + p.Message
		}
		if i > 0 {
			part = "; " + part
		}
		more := fmt.Sprintf("; and %d more", len(ps)-i)
		if b.Len()+len(part) > maxNote-len(more) {
			b.WriteString(more)
			break
		}
		b.WriteString(part)
	}
	return b.String()
}

// findObject returns the object of the snapshot a problem names.
func findObject(snap translate.Snapshot, k objectKey) runtime.Object {
	switch k.kind {
	case translate.KindGateway:
		if snap.Gateway != nil && named(snap.Gateway, k) {
			return snap.Gateway
		}
	case translate.KindL34Route:
		return find(snap.Routes, k)
	case translate.KindService:
		return find(snap.Services, k)
	case translate.KindEndpointSlice:
		return find(snap.EndpointSlices, k)
	case translate.KindGatewayRouter:
		return find(snap.Routers, k)
	}
	return nil
}

func find[T interface {
	runtime.Object
	metav1.Object
}](objs []T, k objectKey) runtime.Object {
	for _, o := range objs {
		if named(o, k) {
			return o
		}
	}
	return nil
}

func named(o metav1.Object, k objectKey) bool {
	return o.GetNamespace() == k.namespace && o.GetName() == k.name
}
