package apiserver_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sllbrd/sllbrd/kube/apiserver"
	"github.com/sllbrd/sllbrd/kube/manifest"
	"github.com/sllbrd/sllbrd/kube/translate"
)

// TestIntegrationByteMatchBeyondCopyRange runs the source as sllbrd does
// with --copy-range 128 (108 bytes of an IPv4 packet's transport header are
// seen) against a real API server: an L34Route whose byte match ends at
// byte 109 is left out and gets a Warning Event saying why; one ending at
// byte 108 is kept.
func TestIntegrationByteMatchBeyondCopyRange(t *testing.T) {
	e := newEnv(t, "sllbrd-test-copy-range")
	e.createExamples()
	r := e.startSource(apiserver.WithTranslateOptions(translate.WithCopyRange(128)))
	r.waitUpdate(t, "the examples", func(u manifest.Update) bool { return u.State != nil && len(u.State.Routes) == 2 })

	for name, match := range map[string]string{"within-copy-range": "tcp[106:2] = 1", "beyond-copy-range": "tcp[107:2] = 1"} {
		route := exampleObject(t, "l34route.yaml", "vip-20-0-0-1-multi-ports-a")
		route.SetName(name)
		route.Object["spec"].(map[string]any)["byteMatches"] = []any{match}
		if _, err := e.custom(l34RouteGVR).Create(e.ctx, route, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	beyond := translate.Problem{Kind: translate.KindL34Route, Namespace: e.ns, Name: "beyond-copy-range"}
	u := r.waitUpdate(t, "the route within the copy range and a problem with the other", func(u manifest.Update) bool {
		return u.State != nil && len(u.State.Routes) == 3 && slices.ContainsFunc(u.Problems, func(p translate.Problem) bool {
			return p.Kind == beyond.Kind && p.Name == beyond.Name
		})
	})
	for _, rt := range u.State.Routes {
		if rt.Name == e.ns+"/beyond-copy-range" {
			t.Errorf("the route beyond the copy range was kept: %+v", rt)
		}
	}
	ev := e.waitEventOn(t, "L34Route", "beyond-copy-range", apiserver.ReasonInvalidL34Route)
	if ev.Type != corev1.EventTypeWarning || ev.Regarding.Kind != "L34Route" ||
		!strings.Contains(ev.Note, "spec.byteMatches[0]: tcp[107:2]") || !strings.Contains(ev.Note, "copy range of 128 bytes") {
		t.Errorf("event = type %s regarding %+v note %q", ev.Type, ev.Regarding, ev.Note)
	}
	if evs := e.eventsOn(t, "L34Route", "within-copy-range"); len(evs) != 0 {
		t.Errorf("Events on the route within the copy range: %+v", evs)
	}
}

// eventsOn lists the events.k8s.io Events regarding the object kind/name.
func (e *env) eventsOn(t *testing.T, kind, name string) []eventsv1.Event {
	t.Helper()
	list, err := e.kube.EventsV1().Events(e.ns).List(e.ctx, metav1.ListOptions{
		FieldSelector: "regarding.kind=" + kind + ",regarding.name=" + name,
	})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitEventOn waits for an Event with reason on the object kind/name.
func (e *env) waitEventOn(t *testing.T, kind, name, reason string) eventsv1.Event {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		for _, ev := range e.eventsOn(t, kind, name) {
			if ev.Reason == reason {
				return ev
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no %s Event on %s %s within %v", reason, kind, name, waitTimeout)
	return eventsv1.Event{}
}
