package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/kube"
)

// controllerLabNamespace is where the controller lab test works.
const controllerLabNamespace = "sllbrd-ctl-lab"

// TestIntegrationControllerLab runs the whole control path in the lab with
// the real kube-apiserver: `sllbrd controller` on the host writes the
// EndpointSlices from the targets' Pod objects (the lab addresses in their
// Multus network-status), `sllbrd` in lb1 reads them. Traffic reaches
// every target; deleting one Pod object moves only that target's flows;
// re-creating it gives it its identifier back, and its flows.
func TestIntegrationControllerLab(t *testing.T) {
	require.Lab(t)
	start := time.Now()
	l := labSetup(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	_, hostAddr := connectHost(ctx, t, l)
	dataplaneSA := kubetest.ServiceAccount(controllerLabNamespace, "sllbrd")
	controllerSA := kubetest.ServiceAccount(controllerLabNamespace, "sllbrd-controller")
	cp := kubetest.StartAt(t, hostAddr, dataplaneSA, controllerSA)
	kc := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	k := &kubeLab{lab: l, cp: cp, kube: kc}
	createControllerLabObjects(ctx, t, cp, kc)
	ctl := startControllerProc(t, cp.Kubeconfig(controllerSA.Name), controllerLabNamespace)
	waitUntil(t, "the controller wrote 3 endpoints per family", func() bool { return sliceEndpoints(ctx, t, kc, "") == 6 })
	t.Logf("controller up and slices written %v after the start", time.Since(start).Round(time.Millisecond))

	inst, err := e2e.StartWithArgs(l, lab.LBName(1), sllbrdBinary,
		"--kubeconfig", cp.Kubeconfig(dataplaneSA.Name), "--namespace", controllerLabNamespace, "--queues", "2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logTail(t, inst) })
	k.inst = inst
	if err := inst.WaitProgrammed(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := l.RouteVIPsVia(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if ctl.metric("sllbrd_controller_leader") != 1 {
		t.Errorf("the controller does not lead")
	}

	k.checkAllTargetsReached(t)

	// Deleting t2's Pod object: the controller drops it from both slices,
	// the dataplane follows, only t2's flows move.
	gen := k.generation(t)
	w := watchSlices(ctx, t, kc)
	deleted := time.Now()
	if err := kc.CoreV1().Pods(controllerLabNamespace).Delete(ctx, "t2", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitWithoutPod(t, w, "t2")
	written := time.Since(deleted)
	w.Stop()
	waitUntil(t, "the dataplane applied the deletion", func() bool { return sliceEndpoints(ctx, t, kc, "t2") == 0 && k.generation(t) > gen })
	applied := time.Since(deleted)
	k.waitNoFlowOn(t, "t2")
	t.Logf("Pod t2 deleted -> both slices written %v -> dataplane applied a new generation %v",
		written.Round(time.Millisecond), applied.Round(time.Millisecond))
	k.checkOnlyT2Moved(t, "t2's Pod deleted")

	// t2 comes back: the lowest free identifier is its old one, so every
	// flow returns to where it was at first.
	createTargetPod(ctx, t, kc, 2)
	waitUntil(t, "t2 listed again", func() bool { return sliceEndpoints(ctx, t, kc, "t2") == 2 })
	k.waitFlows(t, "t2's Pod re-created", k.base)
}

// createControllerLabObjects installs the controller (namespace, CRDs,
// deploy/controller's RBAC), the dataplane's RBAC, the GatewayClass, the
// lab's Gateway, routers and route, service-a selecting app=target, and
// the Pod objects of t1..t3.
func createControllerLabObjects(ctx context.Context, t *testing.T, cp *kubetest.ControlPlane, kc kubernetes.Interface) {
	t.Helper()
	client := installController(ctx, t, cp, kc, controllerLabNamespace)
	dir := t.TempDir()
	if err := e2e.Write(dir, e2e.Config{Routes: webRoute}); err != nil { // Gateway, static routers, the route
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(deployDir, "rbac", "*.yaml"))
	files = append(files, filepath.Join(deployDir, "examples", "gatewayclass.yaml"), filepath.Join(dir, "sllb-a.yaml"))
	if err := client.CreateFiles(ctx, controllerLabNamespace, files...); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "service-a", Labels: map[string]string{kube.LabelServiceProxyName: "sllb-a"}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
			Selector: map[string]string{"app": "target", kube.LabelDummyServiceSelector: "true"}},
	}
	if _, err := kc.CoreV1().Services(controllerLabNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		createTargetPod(ctx, t, kc, i)
	}
}

// createTargetPod creates the Pod object of lab target i as kubelet and
// Multus would leave it: Running, Ready, its lab addresses on the
// Gateway's network in network-status; marked as a sidecar's pod, whose
// Ready condition says its network is configured (the lab configures the
// targets itself).
func createTargetPod(ctx context.Context, t *testing.T, kc kubernetes.Interface, i int) {
	t.Helper()
	a := lab.TargetAddrs(i)
	status, _ := json.Marshal([]map[string]any{
		{"name": "kindnet", "interface": "eth0", "ips": []string{fmt.Sprintf("10.244.0.%d", i)}, "default": true},
		{"name": controllerLabNamespace + "/macvlan-nad-1", "interface": "net1",
			"ips": []string{a.V4.Addr().String(), a.V6.Addr().String()}},
	})
	pods := kc.CoreV1().Pods(controllerLabNamespace)
	pod, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("t%d", i), Labels: map[string]string{"app": "target"},
			Annotations: map[string]string{kube.AnnotationNetworkStatus: string(status), kube.AnnotationTargetAgent: kube.TargetAgentSidecar}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.org/target:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The controller annotates the new Pod meanwhile (its network
	// configuration): write the status on the latest version.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.244.0.%d", i),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sliceEndpoints counts the endpoints of service-a's slices, only those of
// pod when it is not empty.
func sliceEndpoints(ctx context.Context, t *testing.T, kc kubernetes.Interface, pod string) int {
	t.Helper()
	list, err := kc.DiscoveryV1().EndpointSlices(controllerLabNamespace).List(ctx,
		metav1.ListOptions{LabelSelector: kube.LabelServiceName + "=service-a"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range list.Items {
		for _, ep := range s.Endpoints {
			if pod == "" || (ep.TargetRef != nil && ep.TargetRef.Name == pod) {
				n++
			}
		}
	}
	return n
}

func watchSlices(ctx context.Context, t *testing.T, kc kubernetes.Interface) watch.Interface {
	t.Helper()
	w, err := kc.DiscoveryV1().EndpointSlices(controllerLabNamespace).Watch(ctx,
		metav1.ListOptions{LabelSelector: kube.LabelServiceName + "=service-a"})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// waitWithoutPod reads slice events until both families were written
// without pod.
func waitWithoutPod(t *testing.T, w watch.Interface, pod string) {
	t.Helper()
	seen := map[discoveryv1.AddressType]bool{}
	timeout := time.After(30 * time.Second)
	for len(seen) < 2 {
		select {
		case ev := <-w.ResultChan():
			s, ok := ev.Object.(*discoveryv1.EndpointSlice)
			if !ok || ev.Type == watch.Added {
				continue
			}
			if !slices.ContainsFunc(s.Endpoints, func(e discoveryv1.Endpoint) bool { return e.TargetRef != nil && e.TargetRef.Name == pod }) {
				seen[s.AddressType] = true
			}
		case <-timeout:
			t.Fatalf("the slices still list %s after 30s", pod)
		}
	}
}

// waitNoFlowOn runs the baseline flows until none reaches target (the
// dataplane may apply the two slices as two generations).
func (k *kubeLab) waitNoFlowOn(t *testing.T, target string) {
	t.Helper()
	waitUntil(t, "no flow on "+target, func() bool {
		for _, got := range k.flowsNow(t) {
			for _, to := range got {
				if to == target {
					return false
				}
			}
		}
		return true
	})
}

// waitFlows runs the baseline flows until they land where want says.
func (k *kubeLab) waitFlows(t *testing.T, when string, want []map[lab.Flow]string) {
	t.Helper()
	waitUntil(t, when+": flows back where they were", func() bool {
		for i, got := range k.flowsNow(t) {
			if differing(want[i], got) != 0 {
				return false
			}
		}
		return true
	})
}
