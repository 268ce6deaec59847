package apiserver

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/translate"
)

// recorded is one Eventf call.
type recorded struct {
	regarding      runtime.Object
	reason         string
	note, eventTyp string
}

type fakeRecorder struct{ got []recorded }

func (f *fakeRecorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	f.got = append(f.got, recorded{regarding: regarding, reason: reason, eventTyp: eventtype, note: fmt.Sprintf(note, args...)})
}

func TestProblemReporter(t *testing.T) {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "ns", Name: name} }
	slice := &discoveryv1.EndpointSlice{ObjectMeta: meta("slice")}
	route := &v1alpha1.L34Route{ObjectMeta: meta("route")}
	snap := translate.Snapshot{
		Gateway:        &gatewayv1.Gateway{ObjectMeta: meta("gw")},
		Routes:         []*v1alpha1.L34Route{route},
		EndpointSlices: []*discoveryv1.EndpointSlice{slice},
		Services:       []*corev1.Service{{ObjectMeta: meta("svc")}},
	}
	idProblem := translate.Problem{Kind: translate.KindEndpointSlice, Namespace: "ns", Name: "slice",
		Field: "endpoints[0].addresses[0]", Message: "endpoint 10.0.0.1 skipped: identifier 40 is outside 0..31"}
	subnetProblem := translate.Problem{Kind: translate.KindEndpointSlice, Namespace: "ns", Name: "slice",
		Field: "endpoints[1].addresses[0]", Message: "endpoint 10.9.0.1 skipped: address is outside the Gateway's network subnets"}
	routeProblem := translate.Problem{Kind: translate.KindL34Route, Namespace: "ns", Name: "route",
		Field: "spec.priority", Message: "0 is not >= 1"}
	goneProblem := translate.Problem{Kind: translate.KindGatewayRouter, Namespace: "ns", Name: "deleted", Message: "x"}

	tests := []struct {
		name     string
		problems []translate.Problem
		want     []recorded // regarding is compared by identity
	}{
		{"first report, one Event per object", []translate.Problem{idProblem, subnetProblem, routeProblem, goneProblem},
			[]recorded{
				{regarding: slice, reason: ReasonInvalidEndpointIdentifier,
					note: idProblem.Field + ": " + idProblem.Message + "; " + subnetProblem.Field + ": " + subnetProblem.Message},
				{regarding: route, reason: ReasonInvalidL34Route, note: "spec.priority: 0 is not >= 1"},
			}},
		{"persisting problems are not repeated", []translate.Problem{idProblem, subnetProblem, routeProblem}, nil},
		{"a problem that went away", []translate.Problem{idProblem, routeProblem}, nil},
		{"comes back and is reported again", []translate.Problem{idProblem, routeProblem, subnetProblem},
			[]recorded{{regarding: slice, reason: ReasonInvalidEndpoint, note: subnetProblem.Field + ": " + subnetProblem.Message}}},
		{"all fixed", nil, nil},
		{"reported again after a fix", []translate.Problem{routeProblem},
			[]recorded{{regarding: route, reason: ReasonInvalidL34Route, note: "spec.priority: 0 is not >= 1"}}},
	}
	rec := &fakeRecorder{}
	r := newProblemReporter(rec)
	for _, tc := range tests {
		rec.got = nil
		r.report(snap, tc.problems)
		if len(rec.got) != len(tc.want) {
			t.Fatalf("%s: %d events %+v, want %d", tc.name, len(rec.got), rec.got, len(tc.want))
		}
		for i, w := range tc.want {
			g := rec.got[i]
			if g.regarding != w.regarding || g.reason != w.reason || g.note != w.note || g.eventTyp != corev1.EventTypeWarning {
				t.Errorf("%s: event %d = %+v, want %+v", tc.name, i, g, w)
			}
		}
	}
}

func TestNoteOfIsBounded(t *testing.T) {
	var ps []translate.Problem
	for i := range 100 {
		ps = append(ps, translate.Problem{Field: fmt.Sprintf("endpoints[%d].addresses[0]", i),
			Message: "endpoint skipped: no identifier in annotation meridio-experiment/endpoint-identifiers"})
	}
	note := noteOf(ps)
	if len(note) > maxNote || !strings.HasPrefix(note, ps[0].Field) || !strings.Contains(note, "more") {
		t.Errorf("note of %d bytes: %q", len(note), note)
	}
	if got := noteOf(ps[:1]); got != ps[0].Field+": "+ps[0].Message {
		t.Errorf("single note %q", got)
	}
}
