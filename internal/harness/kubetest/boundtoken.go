package kubetest

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// BoundTokenSeconds is the lifetime of the tokens of PodConfig (the API
// server's minimum).
const BoundTokenSeconds = 600

// PodConfig returns a client configuration that authenticates as the
// ServiceAccount of pod with a token bound to pod: a TokenRequest with a
// boundObjectRef to the pod (name and UID), as the kubelet requests for a
// pod's projected service-account token. The API server puts the pod's name
// and UID into the user extra of every request made with it
// (authentication.kubernetes.io/pod-name and pod-uid) and stops accepting
// it once the pod is gone. The ServiceAccount and the pod must exist; the
// token is requested as Admin.
func (cp *ControlPlane) PodConfig(ctx context.Context, pod *corev1.Pod) (*rest.Config, error) {
	admin, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" || pod.UID == "" {
		return nil, fmt.Errorf("kubetest: pod %s/%s: a token is bound to a created pod (uid %q) naming its ServiceAccount (%q)",
			pod.Namespace, pod.Name, pod.UID, sa)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(BoundTokenSeconds)),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	got, err := admin.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubetest: token of ServiceAccount %s/%s bound to pod %s: %w", pod.Namespace, sa, pod.Name, err)
	}
	return cp.tokenConfig(got.Status.Token), nil
}
