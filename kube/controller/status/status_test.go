package status

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/translate"
)

func find(cs []metav1.Condition, typ string) metav1.Condition {
	for _, c := range cs {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

func summary(c metav1.Condition) string {
	return fmt.Sprintf("%s=%s/%s@%d", c.Type, c.Status, c.Reason, c.ObservedGeneration)
}

func TestGatewayStatus(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		in                   Gateway
		accepted, programmed string
		message              string // part of the Programmed message
	}{
		{"accepted and ready", Gateway{Generation: 3, Deployment: &Replicas{2, 1}},
			"Accepted=True/Accepted@3", "Programmed=True/Programmed@3", "1 of 2 SLLBR replicas ready"},
		{"no replica ready", Gateway{Generation: 3, Deployment: &Replicas{2, 0}},
			"Accepted=True/Accepted@3", "Programmed=False/NoReadyReplicas@3", "0 of 2"},
		{"unknown class", Gateway{Generation: 1, NotAccepted: &Problem{ReasonUnknownGatewayClass, "no class"}},
			"Accepted=False/UnknownGatewayClass@1", "Programmed=False/Pending@1", "does not exist yet"},
		{"invalid template, no Deployment", Gateway{Generation: 1, DeploymentProblem: &Problem{ReasonInvalidTemplate, "bad YAML"}},
			"Accepted=True/Accepted@1", "Programmed=False/InvalidTemplate@1", "No SLLBR Deployment: bad YAML"},
		{"invalid parameters, last good Deployment ready", Gateway{Generation: 4, Deployment: &Replicas{2, 2},
			NotAccepted: &Problem{"InvalidParameters", "replicas -1"}},
			"Accepted=False/InvalidParameters@4", "Programmed=True/Programmed@4", "2 of 2"},
		{"invalid template, last good Deployment ready", Gateway{Generation: 4, Deployment: &Replicas{1, 1},
			DeploymentProblem: &Problem{ReasonInvalidTemplate, "no container"}},
			"Accepted=True/Accepted@4", "Programmed=True/Programmed@4", "not up to date: no container"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, conds := GatewayStatus(tc.in)
			a, p := find(conds, TypeAccepted), find(conds, TypeProgrammed)
			if summary(a) != tc.accepted || summary(p) != tc.programmed || !strings.Contains(p.Message, tc.message) {
				t.Errorf("got %s, %s %q; want %s, %s containing %q", summary(a), summary(p), p.Message, tc.accepted, tc.programmed, tc.message)
			}
		})
	}
}

func TestGatewayAddresses(t *testing.T) {
	vips := []netip.Addr{netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("20.0.0.2"), netip.MustParseAddr("20.0.0.1"), netip.MustParseAddr("20.0.0.2")}
	addrs, _ := GatewayStatus(Gateway{VIPs: vips, Deployment: &Replicas{1, 1}})
	var got []string
	for _, a := range addrs {
		if *a.Type != gatewayv1.IPAddressType {
			t.Errorf("type %v", *a.Type)
		}
		got = append(got, a.Value)
	}
	if fmt.Sprint(got) != "[20.0.0.1 20.0.0.2 2001:db8::1]" {
		t.Errorf("addresses %v", got)
	}
	var many []netip.Addr
	for i := range 20 {
		many = append(many, netip.AddrFrom4([4]byte{20, 0, 0, byte(20 - i)}))
	}
	addrs, conds := GatewayStatus(Gateway{VIPs: many, Deployment: &Replicas{1, 1}})
	if len(addrs) != MaxAddresses || addrs[0].Value != "20.0.0.1" || !strings.Contains(find(conds, TypeProgrammed).Message, "lists 16 of 20 VIPs") {
		t.Errorf("20 VIPs: %d addresses from %s, %q", len(addrs), addrs[0].Value, find(conds, TypeProgrammed).Message)
	}
}

func TestMergeConditionsKeepsTransitionTimes(t *testing.T) {
	t1 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t2 := metav1.NewTime(t1.Add(time.Hour))
	current := []metav1.Condition{
		{Type: "Accepted", Status: "True", Reason: "Accepted", ObservedGeneration: 1, LastTransitionTime: t1},
		{Type: "example.org/Other", Status: "True", Reason: "Theirs", LastTransitionTime: t1},
	}
	got := MergeConditions(current, []metav1.Condition{
		condition(TypeAccepted, true, "Accepted", "again", 2),
		condition(TypeProgrammed, false, "Pending", "", 2),
	}, t2)
	if a := find(got, TypeAccepted); !a.LastTransitionTime.Equal(&t1) || a.ObservedGeneration != 2 || a.Message != "again" {
		t.Errorf("unchanged status: %+v", a)
	}
	if p := find(got, TypeProgrammed); !p.LastTransitionTime.Equal(&t2) {
		t.Errorf("new condition: %+v", p)
	}
	if o := find(got, "example.org/Other"); o.Reason != "Theirs" {
		t.Errorf("another writer's condition was dropped: %+v", got)
	}
	if current[0].ObservedGeneration != 1 {
		t.Errorf("MergeConditions modified its input")
	}
	flipped := MergeConditions(got, []metav1.Condition{condition(TypeAccepted, false, "Invalid", "", 3)}, t2)
	if a := find(flipped, TypeAccepted); !a.LastTransitionTime.Equal(&t2) {
		t.Errorf("status change kept the old transition time: %+v", a)
	}
}

func route(backend gatewayv1.BackendRef) *v1alpha1.L34Route {
	return &v1alpha1.L34Route{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", Generation: 5},
		Spec:       v1alpha1.L34RouteSpec{BackendRefs: []gatewayv1.BackendRef{backend}},
	}
}

func TestRouteParentConditions(t *testing.T) {
	svcRef := gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "service-a"}}
	otherNS := svcRef
	otherNS.Namespace = ptr.To(gatewayv1.Namespace("elsewhere"))
	kind := svcRef
	kind.Kind = ptr.To(gatewayv1.Kind("Pod"))
	backendProblem := translate.Problem{Field: "spec.backendRefs[0]", Message: "Service service-a does not exist"}
	cidrProblem := translate.Problem{Field: "spec.destinationCIDRs[0]", Message: "must be /32"}
	for _, tc := range []struct {
		name               string
		r                  *v1alpha1.L34Route
		problems           []translate.Problem
		accepted, resolved string
	}{
		{"valid", route(svcRef), nil, "Accepted=True/Accepted@5", "ResolvedRefs=True/ResolvedRefs@5"},
		{"missing Service", route(svcRef), []translate.Problem{backendProblem}, "Accepted=True/Accepted@5", "ResolvedRefs=False/BackendNotFound@5"},
		{"other namespace", route(otherNS), []translate.Problem{backendProblem}, "Accepted=True/Accepted@5", "ResolvedRefs=False/RefNotPermitted@5"},
		{"not a Service", route(kind), []translate.Problem{backendProblem}, "Accepted=True/Accepted@5", "ResolvedRefs=False/InvalidKind@5"},
		{"bad field", route(svcRef), []translate.Problem{cidrProblem}, "Accepted=False/UnsupportedValue@5", "ResolvedRefs=True/ResolvedRefs@5"},
	} {
		conds := RouteParentConditions(tc.r, tc.problems)
		if a, r := summary(find(conds, TypeAccepted)), summary(find(conds, TypeResolvedRefs)); a != tc.accepted || r != tc.resolved {
			t.Errorf("%s: %s %s, want %s %s", tc.name, a, r, tc.accepted, tc.resolved)
		}
	}
	if m := find(RouteParentConditions(route(svcRef), []translate.Problem{cidrProblem}), TypeAccepted).Message; m != "spec.destinationCIDRs[0]: must be /32" {
		t.Errorf("message %q", m)
	}
}

func TestMergeRouteParents(t *testing.T) {
	const ours gatewayv1.GatewayController = "meridio-experiment/stateless-load-balancer"
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	theirs := gatewayv1.RouteParentStatus{ParentRef: gatewayv1.ParentReference{Name: "x"}, ControllerName: "example.org/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted"}}}
	stale := gatewayv1.RouteParentStatus{ParentRef: gatewayv1.ParentReference{Name: "old-gw"}, ControllerName: ours,
		Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted"}}}
	want := gatewayv1.RouteParentStatus{ParentRef: gatewayv1.ParentReference{Name: "sllb-a"},
		Conditions: RouteParentConditions(route(gatewayv1.BackendRef{}), nil)}
	got := MergeRouteParents([]gatewayv1.RouteParentStatus{theirs, stale}, []gatewayv1.RouteParentStatus{want}, ours, now)
	if len(got) != 2 || got[0].ControllerName != "example.org/other" || got[1].ParentRef.Name != "sllb-a" || got[1].ControllerName != ours ||
		len(got[1].Conditions) != 2 || !got[1].Conditions[0].LastTransitionTime.Equal(&now) {
		t.Errorf("merged %+v", got)
	}
	if again := MergeRouteParents(got, []gatewayv1.RouteParentStatus{want}, ours, metav1.NewTime(now.Add(time.Hour))); !again[1].Conditions[0].LastTransitionTime.Equal(&now) {
		t.Errorf("re-merging the same conditions moved the transition time")
	}
	if none := MergeRouteParents(got, nil, ours, now); len(none) != 1 || none[0].ControllerName != "example.org/other" {
		t.Errorf("removing ours: %+v", none)
	}
}

func TestGatewayClassConditions(t *testing.T) {
	c := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	if got := summary(GatewayClassConditions(c)[0]); got != "Accepted=True/Accepted@2" {
		t.Errorf("plain class: %s", got)
	}
	c.Spec.ParametersRef = &gatewayv1.ParametersReference{Kind: "ConfigMap", Name: "x"}
	if got := summary(GatewayClassConditions(c)[0]); got != "Accepted=False/InvalidParameters@2" {
		t.Errorf("class with parameters: %s", got)
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("é", maxMessage)
	got := clip(long)
	if len(got) > maxMessage || !strings.HasSuffix(got, " ...") || !strings.HasPrefix(got, "éé") {
		t.Errorf("clip: %d bytes", len(got))
	}
	for _, r := range got {
		if r == '\uFFFD' {
			t.Fatalf("clip split a UTF-8 sequence")
		}
	}
}
