package deploy

import (
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/kube"
)

// nodePolicy is deploy/target-node's ValidatingAdmissionPolicy.
const nodePolicy = "sllbrd-target-own-node"

// nodeFiles are deploy/target-node's RBAC and policy.
var nodeFiles = []string{
	"target-node/service_account.yaml", "target-node/cluster_role.yaml", "target-node/cluster_role_binding.yaml",
	"target-node/policy.yaml", "target-node/policy_binding.yaml",
}

// tokenClient is a client authenticating with a TokenRequest of the
// ServiceAccount sa bound to ref (nil: bound to nothing).
func (e *policyEnv) tokenClient(sa string, ref *authenticationv1.BoundObjectReference) kubernetes.Interface {
	e.t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(kubetest.BoundTokenSeconds)), BoundObjectRef: ref}}
	got, err := e.admin.CoreV1().ServiceAccounts(policyNS).CreateToken(e.ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("token of %s bound to %+v: %v", sa, ref, err)
	}
	cfg := rest.CopyConfig(e.cp.AdminConfig())
	cfg.BearerToken = got.Status.Token
	return kubernetes.NewForConfigOrDie(cfg)
}

// whoAmI returns the user a client authenticates as.
func (e *policyEnv) whoAmI(c kubernetes.Interface) authenticationv1.UserInfo {
	e.t.Helper()
	review, err := c.AuthenticationV1().SelfSubjectReviews().Create(e.ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return review.Status.UserInfo
}

// TestIntegrationTargetNodePolicy runs deploy/target-node's RBAC and policy
// on a real kube-apiserver with real tokens: the daemon's pod on node-a
// gets a token bound to it (as the kubelet's projected token), which names
// node-a (ServiceAccountTokenPodNodeInfo, GA in 1.32). With it the daemon
// may list the pods of node-a and change their status annotation, and
// nothing else: not a pod of node-b or of no node, not a label, another
// annotation, the spec, a subresource, another verb (granted here by a
// broader Role a user might write), each refusal saying why. A token naming no node (static,
// bound to nothing, bound to an unscheduled pod) may patch nothing; a token
// bound to node-b patches node-b's pods, not node-a's; the controller is
// not affected.
func TestIntegrationTargetNodePolicy(t *testing.T) {
	ctl := kubetest.ServiceAccount(policyNS, "sllbrd-controller")
	static := kubetest.ServiceAccount(policyNS, targetNodeName) // a token naming no node
	renamed := kubetest.ServiceAccount(policyNS, "tenant-"+targetNodeName+"-2")
	e := newPolicyEnv(t, ctl, static, renamed)
	e.createFiles(nodeFiles...)
	core := e.admin.CoreV1()
	nodes := map[string]*corev1.Node{}
	for _, name := range []string{"node-a", "node-b"} {
		n, err := core.Nodes().Create(e.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes[name] = n
		t.Cleanup(func() { _ = core.Nodes().Delete(e.ctx, name, metav1.DeleteOptions{}) })
	}
	const app = "application"
	if _, err := core.ServiceAccounts(policyNS).Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: app}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.createPodOn("app-a", app, "node-a")
	e.createPodOn("app-b", app, "node-b")
	e.createPodOn("app-pending", app, "")
	daemonA, daemonPending := e.createPodOn("daemon-a", targetNodeName, "node-a"), e.createPodOn("daemon-pending", targetNodeName, "")
	own := e.podClient(daemonA)

	u := e.whoAmI(own)
	if u.Username != static.Name || !slices.Equal(u.Extra[nodeExtra], authenticationv1.ExtraValue{"node-a"}) ||
		!slices.Equal(u.Extra["authentication.kubernetes.io/node-uid"], authenticationv1.ExtraValue{string(nodes["node-a"].UID)}) {
		t.Fatalf("the token bound to daemon-a authenticates as %+v, want %s on node-a (uid %s)", u, static.Name, nodes["node-a"].UID)
	}
	deadline := time.Now().Add(policyWaitLimit)
	for {
		err := annotate(e.ctx, own, "app-b", map[string]any{statusKey: "{}"})
		if err != nil && strings.Contains(err.Error(), nodePolicy) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy is not in effect after %v: patching a pod of another node: %v", policyWaitLimit, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	refused := func(t *testing.T, what string, err error, want string) {
		t.Helper()
		checkRefusedBy(t, nodePolicy, what, err, want)
	}

	t.Run("with its ClusterRole: the pods of its node, and their status annotation", func(t *testing.T) {
		list, err := own.CoreV1().Pods(metav1.NamespaceAll).List(e.ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"})
		if err != nil {
			t.Fatalf("list the pods of node-a in every namespace: %v", err)
		}
		var names []string
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		if slices.Sort(names); !slices.Equal(names, []string{"app-a", "daemon-a"}) {
			t.Errorf("the pods of node-a: %v", names)
		}
		status := `{"version":1,"ready":true,"agent":"node/node-a"}`
		refused(t, "write", annotate(e.ctx, own, "app-a", map[string]any{statusKey: status}), "")
		if _, err := own.CoreV1().Pods(policyNS).Get(e.ctx, "app-a", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("get of a pod: %v, want forbidden (the daemon lists and watches only)", err)
		}
		got, err := e.admin.CoreV1().Pods(policyNS).Get(e.ctx, "app-a", metav1.GetOptions{})
		if err != nil || got.Annotations[statusKey] != status {
			t.Fatalf("status annotation %q (%v)", got.Annotations[statusKey], err)
		}
		refused(t, "removal", annotate(e.ctx, own, "app-a", map[string]any{statusKey: nil}), "")
	})

	// Whatever else a user's broader Role grants, the policy refuses.
	e.grant("broad-node", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: targetNodeName, Namespace: policyNS}, broadPodRules...)
	e.grant("broad-renamed", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: renamed.Name}, broadPodRules...)

	who := "ServiceAccount " + policyNS + "/" + targetNodeName + " (sllbrd target --node)"
	podA := policyNS + "/app-a"
	onlyStatus := who + " may change only the annotation " + statusKey + " of pod " + podA + ", not "
	for _, tc := range []struct {
		what, pod, patch, want string
	}{
		{"a pod of another node", "app-b", `{"metadata":{"annotations":{"` + statusKey + `":"{}"}}}`,
			who + " may patch only pods of node node-a (the node its token names), not pod " + policyNS + "/app-b on node node-b"},
		{"a pod of no node", "app-pending", `{"metadata":{"annotations":{"` + statusKey + `":"{}"}}}`,
			"not pod " + policyNS + "/app-pending, which is on no node"},
		{"the labels of a pod of another node", "app-b", `{"metadata":{"labels":{"app":"elsewhere"}}}`, "not pod " + policyNS + "/app-b on node node-b"},
		{"its labels", "app-a", `{"metadata":{"labels":{"app":"elsewhere"}}}`,
			who + " may not change the labels of pod " + podA + " (labels select the endpoints of Services and the SLLBR pods)"},
		{"its network-status", "app-a", `{"metadata":{"annotations":{"` + networkStatus + `":"[{\"ips\":[\"10.0.0.1\"]}]"}}}`, onlyStatus + networkStatus},
		{"its desired configuration", "app-a", `{"metadata":{"annotations":{"` + desiredKey + `":null}}}`, onlyStatus + desiredKey},
		{"its agent", "app-a", `{"metadata":{"annotations":{"` + kube.AnnotationTargetAgent + `":"sidecar"}}}`, onlyStatus + kube.AnnotationTargetAgent},
		{"a new annotation beside the status", "app-a", `{"metadata":{"annotations":{"` + statusKey + `":"{}","x":"y"}}}`, onlyStatus + "x"},
		{"its spec", "app-a", `{"spec":{"activeDeadlineSeconds":5}}`, who + " may not change the spec, owner references or finalizers of pod " + podA},
		{"its owner", "app-a", `{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"x","uid":"0b7e4d2c-0000-4000-8000-000000000001","controller":true}]}}`,
			"may not change the spec, owner references or finalizers"},
		{"its finalizers", "app-a", `{"metadata":{"finalizers":["example.org/keep"]}}`, "may not change the spec, owner references or finalizers"},
	} {
		refused(t, tc.what, patchPod(e.ctx, own, tc.pod, tc.patch), tc.want)
	}

	t.Run("no other verb or subresource", func(t *testing.T) {
		pods := own.CoreV1().Pods(policyNS)
		_, err := pods.Patch(e.ctx, "app-a", types.MergePatchType, []byte(`{"status":{"phase":"Failed"}}`), metav1.PatchOptions{}, "status")
		refused(t, "its status", err, who+" may only patch pods of its node, not UPDATE pods/status "+podA)
		_, err = pods.Patch(e.ctx, "app-a", types.StrategicMergePatchType,
			[]byte(`{"spec":{"ephemeralContainers":[{"name":"debug","image":"example.org/shell:1"}]}}`), metav1.PatchOptions{}, "ephemeralcontainers")
		refused(t, "an ephemeral container", err, "not UPDATE pods/ephemeralcontainers "+podA)
		refused(t, "a deletion", pods.Delete(e.ctx, "app-a", metav1.DeleteOptions{}), "not DELETE pods "+podA)
		err = pods.EvictV1(e.ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "app-a", Namespace: policyNS}})
		refused(t, "an eviction", err, "not CREATE pods/eviction "+podA)
		_, err = pods.Create(e.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new"}, Spec: corev1.PodSpec{NodeName: "node-a",
			Containers: []corev1.Container{{Name: "c", Image: "example.org/x:1"}}}}, metav1.CreateOptions{})
		refused(t, "a new pod on its node", err, "not CREATE pods")
		err = own.CoreV1().RESTClient().Post().Namespace(policyNS).Resource("pods").Name("app-a").SubResource("exec").
			Param("container", "application").Param("command", "true").Param("stdout", "true").Do(e.ctx).Error()
		refused(t, "exec into a pod of its node", err, "not CONNECT pods/exec "+podA)
	})

	t.Run("a token that names no node", func(t *testing.T) {
		noNode := who + " must use a token that names its node (the projected service-account token of its pod on that node), which says whose pods it may patch"
		for what, c := range map[string]kubernetes.Interface{
			"a static token":                    kubernetes.NewForConfigOrDie(e.cp.Config(static.Name)),
			"a token bound to nothing":          e.tokenClient(targetNodeName, nil),
			"a token bound to a pod on no node": e.podClient(daemonPending),
		} {
			if extra := e.whoAmI(c).Extra; len(extra[nodeExtra]) != 0 {
				t.Fatalf("%s names node %v", what, extra[nodeExtra])
			}
			refused(t, what, annotate(e.ctx, c, "app-a", map[string]any{statusKey: "{}"}), noNode)
		}
	})

	t.Run("the node the token names decides", func(t *testing.T) {
		c := e.tokenClient(targetNodeName, &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "node-b", UID: nodes["node-b"].UID})
		refused(t, "a pod of node-b with a token bound to node-b", annotate(e.ctx, c, "app-b", map[string]any{statusKey: "{}"}), "")
		refused(t, "a pod of node-a with a token bound to node-b", annotate(e.ctx, c, "app-a", map[string]any{statusKey: "{}"}),
			"may patch only pods of node node-b (the node its token names), not pod "+podA+" on node node-a")
	})

	t.Run("a renamed ServiceAccount is still restricted", func(t *testing.T) {
		c := kubernetes.NewForConfigOrDie(e.cp.Config(renamed.Name))
		refused(t, "its write", annotate(e.ctx, c, "app-a", map[string]any{statusKey: "{}"}),
			"ServiceAccount "+policyNS+"/"+"tenant-"+targetNodeName+"-2 (sllbrd target --node) must use a token that names its node")
	})

	t.Run("others are not affected", func(t *testing.T) {
		c := kubernetes.NewForConfigOrDie(e.cp.Config(ctl.Name))
		refused(t, "the controller writing the desired configuration of a pod", annotate(e.ctx, c, "app-b",
			map[string]any{desiredKey: `{"version":1,"generation":2,"gateways":[]}`}), "")
	})
}
