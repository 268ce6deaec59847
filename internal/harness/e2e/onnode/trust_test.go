package onnode

import (
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sllbrd/sllbrd/kube"
)

// checkSidecarToken acts with the token the kubelet gave a pod's sllbrd
// target sidecar (read from the container's file system), as a compromised
// application container with that token could (the example mounts it in
// the sidecar only): deploy/'s admission policy lets it change its own
// pod's status annotation and nothing else. The other pod is one of the
// same application.
func (e *env) checkSidecarToken(p, other corev1.Pod) {
	e.t.Helper()
	app := e.containerPID(p, "application")
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/root/var/run/secrets/kubernetes.io/serviceaccount/token", app)); err == nil {
		e.t.Errorf("%s: the application container holds a service-account token", p.Name)
	}
	pid := e.containerPID(p, "sllbrd-target")
	token, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/var/run/secrets/kubernetes.io/serviceaccount/token", pid))
	if err != nil {
		e.t.Fatalf("%s: the sidecar's token: %v", p.Name, err)
	}
	admin, err := e.node.AdminConfig()
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := &rest.Config{Host: admin.Host, BearerToken: strings.TrimSpace(string(token)),
		TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData}}
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	patch := func(pod, body string) error {
		_, err := as.CoreV1().Pods(ns).Patch(e.ctx, pod, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	status := p.Annotations[kube.AnnotationTargetNetworkStatus]
	quoted := fmt.Sprintf("%q", status)
	if err := patch(p.Name, `{"metadata":{"annotations":{"`+kube.AnnotationTargetNetworkStatus+`":`+quoted+`}}}`); err != nil {
		e.t.Errorf("%s: the sidecar cannot write its own status annotation: %v", p.Name, err)
	}
	for what, try := range map[string]func() error{
		"label its own pod as an SLLBR pod": func() error {
			return patch(p.Name, `{"metadata":{"labels":{"`+kube.LabelComponent+`":"`+kube.ComponentSLLBR+`"}}}`)
		},
		"rewrite its own network-status": func() error {
			return patch(p.Name, `{"metadata":{"annotations":{"`+kube.AnnotationNetworkStatus+`":"[]"}}}`)
		},
		"rewrite its own desired configuration": func() error {
			return patch(p.Name, `{"metadata":{"annotations":{"`+kube.AnnotationTargetNetwork+`":"{}"}}}`)
		},
		"write another pod's status annotation": func() error {
			return patch(other.Name, `{"metadata":{"annotations":{"`+kube.AnnotationTargetNetworkStatus+`":"{}"}}}`)
		},
	} {
		err := try()
		if err == nil {
			e.t.Errorf("%s: the sidecar's token may %s", p.Name, what)
			continue
		}
		e.t.Logf("the sidecar's token may not %s: %v", what, err)
	}
}
