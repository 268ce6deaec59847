package status

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

func TestRouteTargetsCondition(t *testing.T) {
	r := &v1alpha1.L34Route{ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 3}}
	if c := RouteTargetsCondition(r, false, nil); summary(c) != "TargetsConfigured=False/NotAccepted@3" {
		t.Errorf("not accepted: %s", summary(c))
	}
	if c := RouteTargetsCondition(r, true, nil); summary(c) != "TargetsConfigured=True/TargetsConfigured@3" {
		t.Errorf("nothing left out: %s", summary(c))
	}
	conflict := "VIP 20.0.0.1/32 of L34Route b (Gateway g2) left out: L34Route a (Gateway g1) puts it on the pod too"
	limit := "VIPs 21.0.0.1/32 of L34Route b (Gateway g2) left out: it would make 1025 VIPs"
	c := RouteTargetsCondition(r, true, []TargetProblem{
		{Pod: "t3", Reason: "TargetLimit", Message: limit},
		{Pod: "t2", Reason: "VIPConflict", Message: conflict},
		{Pod: "t1", Reason: "VIPConflict", Message: conflict},
		{Pod: "t1", Reason: "VIPConflict", Message: conflict},
	})
	want := "on pods t1, t2: " + conflict + "; on pod t3: " + limit
	if summary(c) != "TargetsConfigured=False/VIPConflict@3" || c.Message != want {
		t.Errorf("problems: %s %q\nwant %q", summary(c), c.Message, want)
	}
	// Many pods and problems: bounded lists.
	var many []TargetProblem
	for i := range 7 {
		for p := range 8 {
			many = append(many, TargetProblem{Pod: fmt.Sprintf("p%d", p), Reason: "TargetLimit", Message: fmt.Sprintf("problem %d", i)})
		}
	}
	c = RouteTargetsCondition(r, true, many)
	if !strings.HasPrefix(c.Message, "on pods p0, p1, p2, p3, p4 and 3 more: problem 0; ") || !strings.HasSuffix(c.Message, "; and 3 more (Events on the pods)") ||
		c.Reason != "TargetLimit" {
		t.Errorf("many: %s %q", c.Reason, c.Message)
	}
}

// TestGatewayTargets: the Gateway's TargetsConfigured condition names its
// routes left out, conflicts first, each route's message bounded, at most
// shownTargetProblems of them.
func TestGatewayTargets(t *testing.T) {
	if c := gatewayTargets(Gateway{Generation: 2}); summary(c) != "TargetsConfigured=True/TargetsConfigured@2" {
		t.Errorf("nothing left out: %s", summary(c))
	}
	long := strings.Repeat("x", 2*maxRouteMessage)
	g := Gateway{Generation: 3, RoutesLeftOut: []RouteLeftOut{
		{Route: "ns/z-limit", Reason: targetpod.RejectedLimit, Message: "on pod t2: VIPs ... left out: too many"},
		{Route: "ns/b-conflict", Reason: targetpod.RejectedConflict, Message: "on pod t1: VIP 20.0.0.1/32 ... left out"},
		{Route: "ns/c-long", Reason: targetpod.RejectedInvalid, Message: long},
	}}
	c := gatewayTargets(g)
	if summary(c) != "TargetsConfigured=False/VIPConflict@3" {
		t.Errorf("left out: %s", summary(c))
	}
	b, l, z := strings.Index(c.Message, "ns/b-conflict"), strings.Index(c.Message, "ns/c-long"), strings.Index(c.Message, "ns/z-limit")
	if b < 0 || l < b || z < l || strings.Contains(c.Message, long) {
		t.Errorf("message %q: want the conflict first, then by name, each bounded", c.Message)
	}
	for i := range shownTargetProblems + 2 {
		g.RoutesLeftOut = append(g.RoutesLeftOut, RouteLeftOut{Route: fmt.Sprintf("ns/more-%d", i), Reason: targetpod.RejectedLimit, Message: "m"})
	}
	if c := gatewayTargets(g); !strings.HasSuffix(c.Message, "and 5 more L34Routes") {
		t.Errorf("many routes: %q", c.Message)
	}
}
