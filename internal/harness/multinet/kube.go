package multinet

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// API is what multinet reads and writes through the Kubernetes API.
type API interface {
	// Pod returns the pod's UID and annotations.
	Pod(ctx context.Context, namespace, name string) (Pod, error)
	// NetworkConfig returns the spec.config of a NetworkAttachmentDefinition.
	NetworkConfig(ctx context.Context, namespace, name string) (string, error)
	// SetNetworkStatus sets the pod's network-status annotation to status,
	// only on the pod of that UID.
	SetNetworkStatus(ctx context.Context, namespace, name, uid, status string) error
}

// Pod is what multinet reads of a pod.
type Pod struct {
	UID         string
	Annotations map[string]string
}

// Dialer returns the API of a kubeconfig file (DialKubeconfig; tests pass
// fakes).
type Dialer func(kubeconfig string) (API, error)

// apiTimeout bounds each request to the API server.
const apiTimeout = 30 * time.Second

var nadResource = schema.GroupVersionResource{Group: NADGroup, Version: NADVersion, Resource: NADResource}

// DialKubeconfig returns the API of the kubeconfig file.
func DialKubeconfig(kubeconfig string) (API, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.Timeout = apiTimeout
	cfg.UserAgent = TypeName
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return &kubeAPI{core: core, dyn: dyn}, nil
}

type kubeAPI struct {
	core corev1client.CoreV1Interface
	dyn  dynamic.Interface
}

func (k *kubeAPI) Pod(ctx context.Context, namespace, name string) (Pod, error) {
	p, err := k.core.Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return Pod{}, fmt.Errorf("get pod %s/%s: %w", namespace, name, err)
	}
	return Pod{UID: string(p.UID), Annotations: p.Annotations}, nil
}

func (k *kubeAPI) NetworkConfig(ctx context.Context, namespace, name string) (string, error) {
	nad, err := k.dyn.Resource(nadResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get %s %s/%s: %w", NADKind, namespace, name, err)
	}
	config, found, err := unstructured.NestedString(nad.Object, "spec", "config")
	if err != nil || !found || config == "" {
		return "", fmt.Errorf("%s %s/%s has no spec.config string (%s reads no configuration files): %v",
			NADKind, namespace, name, TypeName, err)
	}
	return config, nil
}

// SetNetworkStatus merge-patches the one annotation; the patch carries the
// UID, which the API server refuses to change, so a pod replaced under the
// same name is not written.
func (k *kubeAPI) SetNetworkStatus(ctx context.Context, namespace, name, uid, status string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":         uid,
		"annotations": map[string]string{NetworkStatusAnnotation: status},
	}})
	if err != nil {
		return fmt.Errorf("network-status patch: %w", err)
	}
	if _, err := k.core.Pods(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch pod %s/%s: %w", namespace, name, err)
	}
	return nil
}
