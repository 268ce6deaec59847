package controller_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/controller/sllbr"
	"github.com/sllbrd/sllbrd/kube/targetpod"
)

// newTargetEnv is an env with the Gateway sllb-a, its Service service-a
// selecting app=target, the L34Route vip-a to it (vipsA) and a controller
// that leads.
func newTargetEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, tgtNS)
	e.createClass()
	e.createGateway(gatewayObject("sllb-a"))
	e.createService("service-a", "sllb-a", "target", 0)
	e.createRoute("vip-a", "sllb-a", "service-a", "20.0.0.1", "2001:db8::1")
	e.waitLeading(e.startController("only"))
	return e
}

// gatewayDeployment waits for the SLLBR Deployment the controller created
// for the Gateway as it is now (controlled by its UID) and returns it.
func (e *env) gatewayDeployment(gateway string) *appsv1.Deployment {
	e.t.Helper()
	gw := e.gateway(gateway)
	var found *appsv1.Deployment
	e.waitFor("the SLLBR Deployment of Gateway "+gateway, func() (bool, string) {
		list, err := e.kube.AppsV1().Deployments(e.ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for i := range list.Items {
			if metav1.IsControlledBy(&list.Items[i], gw) {
				found = &list.Items[i]
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d Deployments, none controlled by %s", len(list.Items), gw.UID)
	})
	return found
}

// sllbrReplicaSet returns the ReplicaSet of the Gateway's SLLBR Deployment
// (gatewayDeployment), creating it as the Deployment controller would the
// first time.
func (e *env) sllbrReplicaSet(gateway string) *appsv1.ReplicaSet {
	e.t.Helper()
	d := e.gatewayDeployment(gateway)
	name := d.Name + "-" + string(d.UID)[:5]
	rs, err := e.kube.AppsV1().ReplicaSets(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return e.createReplicaSet(name, d, controlledBy("Deployment", d.Name, d.UID))
	}
	if err != nil {
		e.t.Fatalf("get ReplicaSet %s: %v", name, err)
	}
	return rs
}

// collectSLLBR deletes the SLLBR Deployments of a deleted Gateway, their
// ReplicaSets and pods, as the garbage collector does in a cluster (the
// test's control plane runs none).
func (e *env) collectSLLBR(gateway string) {
	e.t.Helper()
	sel := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sllbr.Selector(gateway)).String()}
	pods, err := e.kube.CoreV1().Pods(e.ns).List(e.ctx, sel)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, p := range pods.Items {
		e.deletePod(p.Name, 0)
	}
	if err := e.kube.AppsV1().ReplicaSets(e.ns).DeleteCollection(e.ctx, metav1.DeleteOptions{}, sel); err != nil {
		e.t.Fatal(err)
	}
	if err := e.kube.AppsV1().Deployments(e.ns).DeleteCollection(e.ctx, metav1.DeleteOptions{}, sel); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor("Gateway "+gateway+"'s SLLBR pods gone", func() (bool, string) {
		left, err := e.kube.CoreV1().Pods(e.ns).List(e.ctx, sel)
		if err != nil {
			return false, err.Error()
		}
		return len(left.Items) == 0, fmt.Sprintf("%d pods left", len(left.Items))
	})
}

// createLookAlike creates a pod that looks like an SLLBR pod of gateway to
// anyone reading labels: its labels, a network-status with ip on the
// Gateway's network, Ready, running as serviceAccount, controlled by owner
// (nil for none).
func (e *env) createLookAlike(name, gateway, serviceAccount, ip string, owner *metav1.OwnerReference) {
	e.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: sllbr.Selector(gateway),
			Annotations: map[string]string{kube.AnnotationNetworkStatus: networkStatus(tgtNS+"/"+nadName, ip)}},
		Spec: corev1.PodSpec{NodeName: "node-1", ServiceAccountName: serviceAccount,
			Containers: []corev1.Container{{Name: "sllbrd", Image: "example.org/evil:1"}}},
	}
	if owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	got, err := e.kube.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create Pod %s: %v", name, err)
	}
	e.setPodReady(got, true)
}

// TestIntegrationNextHopsByOwner checks that the next hops of a Gateway
// are the pods of the Deployment the controller created for it, by owner
// chain, and no pod that only looks like one: the same labels,
// network-status and Ready condition without an owner, with a look-alike
// ReplicaSet of a look-alike Deployment the controller did not create, or
// pointing its controller reference at the real ReplicaSet (as anyone who
// may patch the pod can) while running as another ServiceAccount.
func TestIntegrationNextHopsByOwner(t *testing.T) {
	e := newTargetEnv(t)
	e.createPod(podSpec{name: "t1", app: "target", status: networkStatus(tgtNS+"/"+nadName, "169.111.100.11"), ready: true})

	w := e.watchPods("t1")
	real := e.sllbrReplicaSet("sllb-a")
	d := e.gatewayDeployment("sllb-a")
	fake := d.DeepCopy() // the same labels and template; not the Gateway's
	fake.ObjectMeta = metav1.ObjectMeta{Name: "sllbrd-sllb-a-fake", Labels: d.Labels}
	fake, err := e.kube.AppsV1().Deployments(e.ns).Create(e.ctx, fake, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fakeRS := e.createReplicaSet("sllbrd-sllb-a-fake-1", fake, controlledBy("Deployment", fake.Name, fake.UID))
	sa := real.Spec.Template.Spec.ServiceAccountName
	if sa == "" {
		t.Fatal("the SLLBR template names no ServiceAccount")
	}
	lookAlikes := []string{"169.111.100.51", "169.111.100.52", "169.111.100.53"}
	e.createLookAlike("labels-only", "sllb-a", sa, lookAlikes[0], nil)
	e.createLookAlike("fake-deployment", "sllb-a", sa, lookAlikes[1], controlledBy("ReplicaSet", fakeRS.Name, fakeRS.UID))
	e.createLookAlike("forged-owner", "sllb-a", "target-application", lookAlikes[2], controlledBy("ReplicaSet", real.Name, real.UID))
	e.createSLLBRPod("sllbr-1", "sllb-a", true, "169.111.100.1", "fd00:111::1")

	// Every version of t1 written until the one awaited: none may list a
	// look-alike.
	waitHops := func(t *testing.T, want string) {
		t.Helper()
		waitWatched(t, w, func(p *corev1.Pod) bool {
			d, _ := targetpod.ParseDesired(p.Annotations[kube.AnnotationTargetNetwork])
			got := summary(d)
			for _, a := range lookAlikes {
				if strings.Contains(got, a) {
					t.Errorf("a look-alike is a next hop: %s", got)
				}
			}
			return got == want
		})
	}
	waitHops(t, "sllb-a:50000 "+vipsA+" v4=[169.111.100.1] v6=[fd00:111::1]")

	t.Run("a second real pod is added, the look-alikes still not", func(t *testing.T) {
		e.createSLLBRPod("sllbr-2", "sllb-a", true, "169.111.100.2")
		waitHops(t, "sllb-a:50000 "+vipsA+" v4=[169.111.100.1 169.111.100.2] v6=[fd00:111::1]")
	})

	t.Run("the ReplicaSet going takes its pods' next hops", func(t *testing.T) {
		if err := e.kube.AppsV1().ReplicaSets(e.ns).Delete(e.ctx, real.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitHops(t, "sllb-a:50000 "+vipsA+" v4=[] v6=[]")
	})
}
