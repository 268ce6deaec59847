package status

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sllbrd/sllbrd/kube/translate"
)

// Condition types.
const (
	TypeAccepted     = "Accepted"
	TypeProgrammed   = "Programmed"
	TypeResolvedRefs = "ResolvedRefs"
)

// Reasons not defined by the Gateway API (the others are its constants).
const (
	ReasonUnknownGatewayClass = "UnknownGatewayClass"
	ReasonInvalidAnnotations  = "InvalidAnnotations"
	ReasonNoReadyReplicas     = "NoReadyReplicas"
	ReasonInvalidTemplate     = "InvalidTemplate"
	ReasonDeploymentConflict  = "DeploymentConflict"
	ReasonInvalid             = "Invalid"
)

// maxMessage bounds a condition message (the API allows 32768 bytes).
const maxMessage = 4096

// condition returns a condition of the generation; LastTransitionTime is
// left zero for MergeConditions to fill.
func condition(typ string, ok bool, reason, message string, generation int64) metav1.Condition {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: clip(message), ObservedGeneration: generation}
}

// MergeConditions returns current with each of want set (same rules as
// meta.SetStatusCondition: the transition time changes only with the
// status, and is now then); conditions of other types are kept.
func MergeConditions(current []metav1.Condition, want []metav1.Condition, now metav1.Time) []metav1.Condition {
	out := make([]metav1.Condition, len(current))
	for i := range current {
		current[i].DeepCopyInto(&out[i])
	}
	for _, c := range want {
		c.LastTransitionTime = now
		meta.SetStatusCondition(&out, c)
	}
	return out
}

// Join formats problems as "field: message; ..." (without the object's
// name, which the condition's object is).
func Join(ps []translate.Problem) string {
	var parts []string
	for _, p := range ps {
		if p.Field != "" {
			parts = append(parts, p.Field+": "+p.Message)
		} else {
			parts = append(parts, p.Message)
		}
	}
	return strings.Join(parts, "; ")
}

func clip(s string) string { return clipTo(s, maxMessage) }

// clipTo cuts s to at most max bytes, marking the cut with " ...".
func clipTo(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len(" ...")
	for cut > 0 && s[cut]&0xc0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + " ..."
}
