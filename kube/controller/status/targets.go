package status

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// TypeTargetsConfigured is the L34Route parent condition that says
// whether the route's VIPs are in the network configuration the
// controller writes on every target pod of its Service.
const TypeTargetsConfigured = "TargetsConfigured"

// ReasonNotAccepted is TargetsConfigured's reason while the route is not
// accepted (or its backend not resolved): it puts no VIP on any pod.
const ReasonNotAccepted = "NotAccepted"

// TargetProblem is a part of a route left out of one target pod's
// network configuration (kube/targetpod.Admit).
type TargetProblem struct {
	Pod string
	// Reason is the targetpod.Rejection's (VIPConflict, TargetLimit,
	// TargetRefused).
	Reason string
	// Message says what is left out and why, naming the other objects.
	Message string
}

// shownTargetProblems bounds the distinct problems a message lists.
const shownTargetProblems = 4

// RouteTargetsCondition returns the TargetsConfigured condition of an
// L34Route towards one owned Gateway: True when nothing of the route is
// left out of a target pod's configuration; False with the reason of the
// first problem (conflicts first) and a message that groups the pods per
// problem, e.g. `on pods t1, t2: VIP 20.0.0.1/32 of L34Route b (Gateway
// g2) left out: L34Route a (Gateway g1) puts it on the pod too ...`.
func RouteTargetsCondition(r *v1alpha1.L34Route, accepted bool, problems []TargetProblem) metav1.Condition {
	if !accepted {
		return condition(TypeTargetsConfigured, false, ReasonNotAccepted, "The route is not accepted: it puts no VIP on any target pod", r.Generation)
	}
	if len(problems) == 0 {
		return condition(TypeTargetsConfigured, true, TypeTargetsConfigured,
			"The route's VIPs are in the network configuration of every target pod of its Service", r.Generation)
	}
	type group struct {
		reason, message string
		pods            []string
	}
	var groups []*group
	for _, p := range problems {
		i := slices.IndexFunc(groups, func(g *group) bool { return g.message == p.Message })
		if i < 0 {
			groups = append(groups, &group{reason: p.Reason, message: p.Message})
			i = len(groups) - 1
		}
		if !slices.Contains(groups[i].pods, p.Pod) {
			groups[i].pods = append(groups[i].pods, p.Pod)
		}
	}
	slices.SortFunc(groups, func(a, b *group) int {
		return cmp.Or(cmp.Compare(reasonRank(a.reason), reasonRank(b.reason)), cmp.Compare(a.message, b.message))
	})
	parts := make([]string, len(groups))
	for i, g := range groups {
		slices.Sort(g.pods)
		parts[i] = podsList(g.pods) + ": " + g.message
	}
	return condition(TypeTargetsConfigured, false, groups[0].reason, firstOf(parts, "(Events on the pods)"), r.Generation)
}

// firstOf joins the first shownTargetProblems parts and says how many more
// there are, and where to find them.
func firstOf(parts []string, where string) string {
	if len(parts) > shownTargetProblems {
		parts = append(parts[:shownTargetProblems:shownTargetProblems], fmt.Sprintf("and %d more %s", len(parts)-shownTargetProblems, where))
	}
	return strings.Join(parts, "; ")
}

// reasonRank puts conflicts first: they name the other route to change.
func reasonRank(reason string) int {
	if reason == targetpod.RejectedConflict {
		return 0
	}
	return 1
}

// podsList is "on pod a" or "on pods a, b, c and 4 more".
func podsList(pods []string) string {
	const shown = 5
	if len(pods) == 1 {
		return "on pod " + pods[0]
	}
	list := strings.Join(pods[:min(len(pods), shown)], ", ")
	if len(pods) > shown {
		list += fmt.Sprintf(" and %d more", len(pods)-shown)
	}
	return "on pods " + list
}
