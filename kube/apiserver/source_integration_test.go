package apiserver_test

import (
	"encoding/json"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/apiserver"
	"github.com/sllbrd/sllbrd/kube/manifest"
	"github.com/sllbrd/sllbrd/model"
)

// TestIntegrationSourceFollowsObjects runs the source with the credentials
// of deploy/rbac against a real API server and changes every kind of object
// it watches.
func TestIntegrationSourceFollowsObjects(t *testing.T) {
	e := newEnv(t, "sllbrd-test-src")
	e.createExamples()
	r := e.startSource()

	u := r.waitUpdate(t, "the examples", func(u manifest.Update) bool { return u.State != nil })
	s := u.State
	if u.Err != nil || len(u.Problems) != 0 || s.Generation != 1 {
		t.Fatalf("first update: generation %d err %v problems %v", s.Generation, u.Err, u.Problems)
	}
	if len(s.Routes) != 2 || len(s.Routers) != 2 || len(s.Services) != 1 || len(s.Services[0].Endpoints) != 6 {
		t.Fatalf("first state: %+v", s)
	}
	r.waitReady(t, true, waitTimeout)
	gen, last := s.Generation, s
	next := func(what string, ok func(*model.State) bool) *model.State {
		t.Helper()
		u := r.waitUpdate(t, what, func(u manifest.Update) bool { return u.State != nil && ok(u.State) })
		if u.State.Generation <= gen {
			t.Fatalf("%s: generation %d did not increase from %d", what, u.State.Generation, gen)
		}
		gen, last = u.State.Generation, u.State
		return u.State
	}

	t.Run("endpoint turns not ready", func(t *testing.T) {
		var addr string
		e.updateSlice(t, "service-a-ipv4", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[1].Conditions.Ready = ptr(false)
			addr = s.Endpoints[1].Addresses[0]
		})
		next("endpoint "+addr+" not ready", func(s *model.State) bool {
			ep, ok := endpoint(s, addr)
			return ok && !ep.Ready
		})
	})
	t.Run("new L34Route", func(t *testing.T) {
		route := exampleObject(t, "l34route.yaml", "vip-20-0-0-1-multi-ports-a")
		route.SetName("vip-20-0-0-2")
		route.Object["spec"].(map[string]any)["priority"] = int64(20)
		route.Object["spec"].(map[string]any)["destinationCIDRs"] = []any{"20.0.0.2/32"}
		if _, err := e.custom(l34RouteGVR).Create(e.ctx, route, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		s := next("a third route first", func(s *model.State) bool { return len(s.Routes) == 3 })
		if s.Routes[0].Name != e.ns+"/vip-20-0-0-2" || s.Routes[0].Priority != 20 ||
			!slices.Equal(s.Routes[0].Destinations, []netip.Prefix{netip.MustParsePrefix("20.0.0.2/32")}) {
			t.Errorf("routes[0] = %+v", s.Routes[0])
		}
	})
	t.Run("deleted GatewayRouter", func(t *testing.T) {
		if err := e.custom(gatewayRouterGVR).Delete(e.ctx, "gateway-a-v6", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		s := next("one router", func(s *model.State) bool { return len(s.Routers) == 1 })
		if s.Routers[0].Name != e.ns+"/gateway-a-v4" {
			t.Errorf("routers = %+v", s.Routers)
		}
	})
	t.Run("unrelated objects", func(t *testing.T) {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{kube.LabelServiceProxyName: "another-gateway"}},
			Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone},
		}
		if _, err := e.kube.CoreV1().Services(e.ns).Create(e.ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		r.noUpdate(t, time.Second, "a Service of another Gateway")
	})
	t.Run("invalid endpoint identifier", func(t *testing.T) {
		var addr string
		before := len(last.Services[0].Endpoints)
		e.updateSlice(t, "service-a-ipv6", func(s *discoveryv1.EndpointSlice) {
			addr = s.Endpoints[1].Addresses[0]
			ids := map[string]int{}
			if err := json.Unmarshal([]byte(s.Annotations[kube.AnnotationEndpointIdentifiers]), &ids); err != nil {
				t.Fatal(err)
			}
			ids[addr] = 99
			b, _ := json.Marshal(ids)
			s.Annotations[kube.AnnotationEndpointIdentifiers] = string(b)
		})
		next("endpoint "+addr+" dropped", func(s *model.State) bool {
			_, ok := endpoint(s, addr)
			return !ok && len(s.Services[0].Endpoints) == before-1
		})
		ev := e.waitEvent(t, "service-a-ipv6", apiserver.ReasonInvalidEndpointIdentifier)
		if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, "identifier 99 is outside 0..31") ||
			ev.Regarding.Kind != "EndpointSlice" || ev.ReportingController != apiserver.ReportingController {
			t.Errorf("event = type %s note %q regarding %+v controller %q", ev.Type, ev.Note, ev.Regarding, ev.ReportingController)
		}
		// A later change that leaves the problem in place does not repeat it.
		e.updateSlice(t, "service-a-ipv4", func(s *discoveryv1.EndpointSlice) { s.Endpoints = s.Endpoints[1:] })
		next("one IPv4 endpoint fewer", func(s *model.State) bool { return len(s.Services[0].Endpoints) == before-2 })
		time.Sleep(time.Second)
		if evs := e.events(t, "service-a-ipv6"); len(evs) != 1 || evs[0].Series != nil {
			t.Errorf("the persistent problem was reported again: %d events, series %+v", len(evs), evs[0].Series)
		}
	})
	t.Run("Service leaves the Gateway", func(t *testing.T) {
		patch := `{"metadata":{"labels":{"` + kube.LabelServiceProxyName + `":"another-gateway"}}}`
		if _, err := e.kube.CoreV1().Services(e.ns).Patch(e.ctx, "service-a", types.MergePatchType,
			[]byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		next("no Service, no route", func(s *model.State) bool { return len(s.Services) == 0 && len(s.Routes) == 0 })
	})
	t.Run("Gateway deleted", func(t *testing.T) {
		gwClient := e.client.Dynamic.Resource(gatewayGVR).Namespace(e.ns)
		if err := gwClient.Delete(e.ctx, gatewayName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		u := r.waitUpdate(t, "an error", func(u manifest.Update) bool { return u.Err != nil })
		if u.State == nil || u.State.Generation != gen || !strings.Contains(u.Err.Error(), "no Gateway") {
			t.Errorf("after deleting the Gateway: generation %d (want the last, %d), err %v", generation(u), gen, u.Err)
		}
	})
}

// updateSlice reads an EndpointSlice, changes it and writes it back.
func (e *env) updateSlice(t *testing.T, name string, change func(*discoveryv1.EndpointSlice)) {
	t.Helper()
	slices := e.kube.DiscoveryV1().EndpointSlices(e.ns)
	s, err := slices.Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	change(s)
	if _, err := slices.Update(e.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update EndpointSlice %s: %v", name, err)
	}
}

func ptr[T any](v T) *T { return &v }

// events lists the events.k8s.io Events regarding an EndpointSlice.
func (e *env) events(t *testing.T, slice string) []eventsv1.Event {
	t.Helper()
	list, err := e.kube.EventsV1().Events(e.ns).List(e.ctx, metav1.ListOptions{
		FieldSelector: "regarding.kind=EndpointSlice,regarding.name=" + slice,
	})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitEvent waits for an Event with reason on an EndpointSlice.
func (e *env) waitEvent(t *testing.T, slice, reason string) eventsv1.Event {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		for _, ev := range e.events(t, slice) {
			if ev.Reason == reason {
				return ev
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no %s Event on EndpointSlice %s within %v", reason, slice, waitTimeout)
	return eventsv1.Event{}
}

// endpoint finds an endpoint of the state's first Service by address.
func endpoint(s *model.State, addr string) (model.Endpoint, bool) {
	if len(s.Services) == 0 {
		return model.Endpoint{}, false
	}
	for _, ep := range s.Services[0].Endpoints {
		if ep.Addr == netip.MustParseAddr(addr) {
			return ep, true
		}
	}
	return model.Endpoint{}, false
}
