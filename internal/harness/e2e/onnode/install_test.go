package onnode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/kube"
)

// imageOverride is a kustomize images entry that puts the image this run
// built where deploy/ names the release.
func (e *env) imageOverride() string {
	i := strings.LastIndexByte(e.images.sllbrd.Ref, ':')
	name, tag := e.images.sllbrd.Ref[:i], e.images.sllbrd.Ref[i+1:]
	return fmt.Sprintf("images:\n- name: ghcr.io/sllbrd/sllbrd\n  newName: %s\n  newTag: %q\n", name, tag)
}

// relRepo is the repository path p relative to the test's directory (a
// kustomization refers to its bases by relative path).
func (e *env) relRepo(p string) string {
	e.t.Helper()
	rel, err := filepath.Rel(filepath.Join(e.dir, "deploy"), filepath.Join(e.repo, p))
	if err != nil {
		e.t.Fatal(err)
	}
	return rel
}

// installDeploy is the user's first step: the Gateway API CRDs, then
// `kubectl apply -k` of deploy/ through an overlay that changes the image
// and nothing else. It returns once the controller Deployment is Available
// and one replica holds the Lease.
func (e *env) installDeploy() {
	crds, err := kubetest.GatewayAPICRDs()
	if err != nil {
		e.t.Fatal(err)
	}
	start := time.Now()
	e.k(append([]string{"apply", "--server-side"}, flagFiles(crds)...)...)
	// kubectl wait fails instead of waiting while a new CRD has no status
	// conditions yet: ask again.
	e.waitFor(time.Minute, "the Gateway API CRDs Established", func() (bool, string) {
		_, err := e.tryRun(e.kubectl, "wait", "--for=condition=Established", "--timeout=10s",
			"crd/gateways.gateway.networking.k8s.io", "crd/gatewayclasses.gateway.networking.k8s.io")
		return err == nil, fmt.Sprint(err)
	})
	overlay := e.writeFile("deploy/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"+
		"resources:\n- "+e.relRepo("deploy")+"\n"+e.imageOverride())
	e.t.Logf("kubectl apply -k of an overlay of deploy/:\n%s", readFile(e.t, overlay))
	e.k("apply", "-k", filepath.Dir(overlay))
	e.waitFor(3*time.Minute, "the controller Deployment Available", func() (bool, string) {
		return e.deploymentReady(controllerName)
	})
	e.waitFor(time.Minute, "one controller replica leads", func() (bool, string) {
		leader, err := e.leader()
		return err == nil && leader != "", fmt.Sprint(leader, err)
	})
	e.record("deploy/ applied: controller Ready, one replica leads", time.Since(start))
}

func flagFiles(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, "-f", p)
	}
	return out
}

func readFile(t interface{ Fatal(...any) }, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// deploymentReady reports whether a Deployment has all its replicas
// updated, ready and available, and no others.
func (e *env) deploymentReady(name string) (bool, string) {
	d, err := e.kube.AppsV1().Deployments(ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	ok := s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.ReadyReplicas == want &&
		s.AvailableReplicas == want && s.Replicas == want
	return ok, fmt.Sprintf("%s: want %d, status %+v; %s", name, want, s, e.podProblems(d))
}

// podProblems summarises why the pods of a Deployment are not ready.
func (e *env) podProblems(d *appsv1.Deployment) string {
	pods := e.pods(d.Spec.Selector.MatchLabels)
	var out []string
	for _, p := range pods {
		line := p.Name + " " + string(p.Status.Phase)
		if p.Status.Reason != "" {
			line += " " + p.Status.Reason + ": " + p.Status.Message
		}
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil {
				line += fmt.Sprintf(" [%s waiting %s: %s]", c.Name, w.Reason, w.Message)
			}
			if !c.Ready {
				line += fmt.Sprintf(" [%s not ready, %d restarts]", c.Name, c.RestartCount)
			}
		}
		out = append(out, line)
	}
	return strings.Join(out, "; ")
}

// pods lists the pods with the labels, oldest first.
func (e *env) pods(sel map[string]string) []corev1.Pod {
	e.t.Helper()
	list, err := e.kube.CoreV1().Pods(ns).List(e.ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
	if err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

// leader returns the pod name of the controller replica holding the Lease.
func (e *env) leader() (string, error) {
	id, err := e.leaderIdentity()
	pod, _, _ := strings.Cut(id, "_") // the identity is hostname_uuid
	return pod, err
}

// leaderIdentity is the Lease's holder: one controller process.
func (e *env) leaderIdentity() (string, error) {
	l, err := e.kube.CoordinationV1().Leases(ns).Get(e.ctx, controllerName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return "", err
	}
	return *l.Spec.HolderIdentity, nil
}

// sllbrSelector selects the SLLBR pods of the Gateway (the labels the
// controller sets; the test identifies its pods by them, sllbrd does not).
var sllbrSelector = map[string]string{kube.LabelComponent: kube.ComponentSLLBR, kube.LabelGatewayName: gatewayName}
