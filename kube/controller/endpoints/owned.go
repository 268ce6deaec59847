package endpoints

import (
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sllbrd/sllbrd/kube"
)

// Managed reports whether s is a slice the controller wrote for the
// Service service with UID uid (any UID when uid is empty: the Service is
// gone): its managed-by label is the controller's and its controller
// reference is that Service. The label alone is not enough, as anyone who
// may write slices can set it.
func Managed(s *discoveryv1.EndpointSlice, service string, uid types.UID) bool {
	if s.Labels[kube.LabelEndpointSliceManagedBy] != kube.EndpointSliceManager {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(s)
	return ref != nil && ref.APIVersion == "v1" && ref.Kind == "Service" && ref.Name == service &&
		(uid == "" || ref.UID == uid)
}
