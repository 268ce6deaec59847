package deploy

import (
	"context"
	"encoding/json"
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

	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

const (
	policyNS        = "sllbrd-policy"
	targetSA        = "target-application" // deploy/examples/target-application.yaml's
	statusKey       = "meridio-experiment/target-network-status"
	desiredKey      = "meridio-experiment/target-network"
	networkStatus   = "k8s.v1.cni.cncf.io/network-status"
	policyWaitLimit = 60 * time.Second
)

// policyEnv is a control plane with deploy/admission, the example
// application's ServiceAccount, Role, RoleBinding and policy parameters,
// and the controller's RBAC.
type policyEnv struct {
	t     *testing.T
	ctx   context.Context
	cp    *kubetest.ControlPlane
	admin kubernetes.Interface
	dyn   *kubetest.Client
}

func newPolicyEnv(t *testing.T, users ...kubetest.User) *policyEnv {
	t.Helper()
	require.Integration(t)
	cp := kubetest.Start(t, users...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	dyn, err := kubetest.NewClient(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	e := &policyEnv{t: t, ctx: ctx, cp: cp, admin: kubernetes.NewForConfigOrDie(cp.AdminConfig()), dyn: dyn}
	if _, err := e.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: policyNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.createFiles("admission/target_policy.yaml", "admission/target_policy_binding.yaml", "examples/target-application.yaml",
		"controller/service_account.yaml", "controller/role.yaml", "controller/role_binding.yaml")
	return e
}

// createFiles creates the objects of files of deploy/ in policyNS.
func (e *policyEnv) createFiles(files ...string) {
	e.t.Helper()
	if err := e.dyn.CreateFiles(e.ctx, policyNS, files...); err != nil {
		e.t.Fatal(err)
	}
}

// createPod creates a pod on node-1 running as serviceAccount with the
// annotations Multus and the controller give a target pod.
func (e *policyEnv) createPod(name, serviceAccount string) *corev1.Pod {
	e.t.Helper()
	return e.createPodOn(name, serviceAccount, "node-1")
}

// createPodOn is createPod on node ("": not scheduled).
func (e *policyEnv) createPodOn(name, serviceAccount, node string) *corev1.Pod {
	e.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "example-target-application-multi"},
			Annotations: map[string]string{networkStatus: `[]`, desiredKey: `{"version":1,"generation":1,"gateways":[]}`}},
		Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: serviceAccount,
			Containers: []corev1.Container{{Name: "application", Image: "example.org/app:1"}}},
	}
	got, err := e.admin.CoreV1().Pods(policyNS).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create Pod %s: %v", name, err)
	}
	return got
}

// podClient is a client with a token bound to pod.
func (e *policyEnv) podClient(pod *corev1.Pod) kubernetes.Interface {
	e.t.Helper()
	cfg, err := e.cp.PodConfig(e.ctx, pod)
	if err != nil {
		e.t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// broadPodRules are the rights on pods a user might grant beyond the
// roles of deploy/: the policies must refuse what they allow.
var broadPodRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"pods/status", "pods/ephemeralcontainers"}, Verbs: []string{"update", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"pods/eviction", "pods/exec"}, Verbs: []string{"create"}},
}

// grant binds a Role of rules in the namespace to a ServiceAccount or user.
func (e *policyEnv) grant(name string, subject rbacv1.Subject, rules ...rbacv1.PolicyRule) {
	e.t.Helper()
	rbac := e.admin.RbacV1()
	if _, err := rbac.Roles(policyNS).Create(e.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: []rbacv1.Subject{subject},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
	if _, err := rbac.RoleBindings(policyNS).Create(e.ctx, binding, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// annotate merge-patches annotations of a pod (a nil value removes one).
func annotate(ctx context.Context, c kubernetes.Interface, pod string, annotations map[string]any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	return patchPod(ctx, c, pod, string(patch))
}

func patchPod(ctx context.Context, c kubernetes.Interface, pod, patch string) error {
	_, err := c.CoreV1().Pods(policyNS).Patch(ctx, pod, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// checkRefused fails unless err is the API server's Forbidden by
// sllbrd-target-own-pod with a message containing want; want "" expects
// success.
func checkRefused(t *testing.T, what string, err error, want string) {
	t.Helper()
	checkRefusedBy(t, "sllbrd-target-own-pod", what, err, want)
}

// checkRefusedBy is checkRefused for the ValidatingAdmissionPolicy policy.
func checkRefusedBy(t *testing.T, policy, what string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: refused: %v", what, err)
	case want == "":
	case err == nil:
		t.Errorf("%s: allowed, want refused with %q", what, want)
	case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "'"+policy+"'") || !strings.Contains(err.Error(), want):
		t.Errorf("%s: %v, want Forbidden by %s saying %q", what, err, policy, want)
	default:
		t.Logf("%s: refused: %v", what, err)
	}
}

// TestIntegrationTargetPolicy runs deploy/admission's policy on a real
// kube-apiserver with real pod-bound tokens (TokenRequest bound to a pod,
// as the kubelet's projected token), the example's ServiceAccount listed
// by the example's ConfigMap and granted, besides the example's Role, a
// broader one a user might write: with the token of its pod it may change
// that pod's status annotation and nothing else, with a message saying
// why; the controller, the kubelet and an unlisted ServiceAccount are not
// affected.
func TestIntegrationTargetPolicy(t *testing.T) {
	ctl := kubetest.ServiceAccount(policyNS, "sllbrd-controller")
	unbound := kubetest.ServiceAccount(policyNS, targetSA) // a token bound to no pod
	kubelet := kubetest.User{Name: "system:node:node-1", Groups: []string{"system:nodes"}}
	e := newPolicyEnv(t, ctl, unbound, kubelet)
	const other = "other-application"
	if _, err := e.admin.CoreV1().ServiceAccounts(policyNS).Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, sa := range []string{targetSA, other} {
		e.grant("broad-"+sa, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: policyNS}, broadPodRules...)
	}
	e.grant("kubelet", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: kubelet.Name},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"get", "update", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}})
	app1, app2, other1 := e.createPod("app-1", targetSA), e.createPod("app-2", targetSA), e.createPod("other-1", other)
	own := e.podClient(app1)

	review, err := own.AuthenticationV1().SelfSubjectReviews().Create(e.ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != unbound.Name ||
		!slices.Equal(u.Extra["authentication.kubernetes.io/pod-name"], authenticationv1.ExtraValue{"app-1"}) ||
		!slices.Equal(u.Extra["authentication.kubernetes.io/pod-uid"], authenticationv1.ExtraValue{string(app1.UID)}) {
		t.Fatalf("the bound token authenticates as %+v, want %s with app-1's name and UID", u, unbound.Name)
	}

	// The policy and its binding take effect once kube-apiserver has read
	// them: until the first refusal.
	deadline := time.Now().Add(policyWaitLimit)
	for {
		err := annotate(e.ctx, own, "app-2", map[string]any{statusKey: "{}"})
		if err != nil && strings.Contains(err.Error(), "sllbrd-target-own-pod") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy is not in effect after %v: patching another pod: %v", policyWaitLimit, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	t.Run("its own pod's status annotation", func(t *testing.T) {
		checkRefused(t, "write", annotate(e.ctx, own, "app-1", map[string]any{statusKey: `{"version":1,"ready":true}`}), "")
		got, err := e.admin.CoreV1().Pods(policyNS).Get(e.ctx, "app-1", metav1.GetOptions{})
		if err != nil || got.Annotations[statusKey] != `{"version":1,"ready":true}` {
			t.Fatalf("status annotation %q (%v)", got.Annotations[statusKey], err)
		}
		checkRefused(t, "removal", annotate(e.ctx, own, "app-1", map[string]any{statusKey: nil}), "")
	})

	who := "ServiceAccount " + policyNS + "/" + targetSA + " (sllbrd target)"
	onlyStatus := who + " may change only the annotation " + statusKey + " of pod app-1, not "
	for _, tc := range []struct {
		what, patch, want string
	}{
		{"its labels", `{"metadata":{"labels":{"app":"elsewhere"}}}`, who + " may not change the labels of pod app-1"},
		{"a new label", `{"metadata":{"labels":{"app.kubernetes.io/component":"sllbr"}}}`, "may not change the labels"},
		{"its network-status", `{"metadata":{"annotations":{"` + networkStatus + `":"[{\"ips\":[\"10.0.0.1\"]}]"}}}`, onlyStatus + networkStatus},
		{"its desired configuration", `{"metadata":{"annotations":{"` + desiredKey + `":null}}}`, onlyStatus + desiredKey},
		{"a new annotation beside the status", `{"metadata":{"annotations":{"` + statusKey + `":"{}","x":"y"}}}`, onlyStatus + "x"},
		{"its spec", `{"spec":{"activeDeadlineSeconds":5}}`, who + " may not change the spec, owner references or finalizers of pod app-1"},
		{"its owner", `{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"sllbrd-sllb-a-1","uid":"0b7e4d2c-0000-4000-8000-000000000001","controller":true}]}}`,
			"may not change the spec, owner references or finalizers"},
		{"its finalizers", `{"metadata":{"finalizers":["example.org/keep"]}}`, "may not change the spec, owner references or finalizers"},
	} {
		checkRefused(t, tc.what, patchPod(e.ctx, own, "app-1", tc.patch), tc.want)
	}
	checkRefused(t, "another pod's status annotation", annotate(e.ctx, own, "app-2", map[string]any{statusKey: "{}"}),
		who+" may patch only the pod its token is bound to, app-1 (uid "+string(app1.UID)+"), not pod app-2 (uid "+string(app2.UID)+")")
	checkRefused(t, "another pod's labels", patchPod(e.ctx, own, "app-2", `{"metadata":{"labels":{"app":"elsewhere"}}}`), "not pod app-2")

	t.Run("no other verb or subresource", func(t *testing.T) {
		pods := own.CoreV1().Pods(policyNS)
		_, err := pods.Patch(e.ctx, "app-1", types.MergePatchType, []byte(`{"status":{"phase":"Failed"}}`), metav1.PatchOptions{}, "status")
		checkRefused(t, "its status", err, who+" may only patch its own pod, not UPDATE pods/status app-1")
		_, err = pods.Patch(e.ctx, "app-1", types.StrategicMergePatchType,
			[]byte(`{"spec":{"ephemeralContainers":[{"name":"debug","image":"example.org/shell:1"}]}}`), metav1.PatchOptions{}, "ephemeralcontainers")
		checkRefused(t, "an ephemeral container", err, "not UPDATE pods/ephemeralcontainers app-1")
		checkRefused(t, "its deletion", pods.Delete(e.ctx, "app-1", metav1.DeleteOptions{}), "not DELETE pods app-1")
		err = pods.EvictV1(e.ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "app-2", Namespace: policyNS}})
		checkRefused(t, "an eviction", err, "not CREATE pods/eviction app-2")
		_, err = pods.Create(e.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new"}, Spec: corev1.PodSpec{ServiceAccountName: "sllbrd-controller",
			Containers: []corev1.Container{{Name: "c", Image: "example.org/x:1"}}}}, metav1.CreateOptions{})
		checkRefused(t, "a new pod", err, "not CREATE pods")
		err = own.CoreV1().RESTClient().Post().Namespace(policyNS).Resource("pods").Name("app-2").SubResource("exec").
			Param("container", "application").Param("command", "true").Param("stdout", "true").Do(e.ctx).Error()
		checkRefused(t, "exec into another pod", err, "not CONNECT pods/exec app-2")
	})

	t.Run("a token bound to no pod", func(t *testing.T) {
		c := kubernetes.NewForConfigOrDie(e.cp.Config(unbound.Name))
		checkRefused(t, "its status annotation", annotate(e.ctx, c, "app-1", map[string]any{statusKey: "{}"}),
			who+" must use a token bound to its pod (the projected service-account token of the pod), which names the one pod it may patch")
	})

	t.Run("others are not affected", func(t *testing.T) {
		c := kubernetes.NewForConfigOrDie(e.cp.Config(ctl.Name))
		checkRefused(t, "the controller writing the desired configuration", annotate(e.ctx, c, "app-1",
			map[string]any{desiredKey: `{"version":1,"generation":2,"gateways":[]}`}), "")
		node := kubernetes.NewForConfigOrDie(e.cp.Config(kubelet.Name))
		_, err := node.CoreV1().Pods(policyNS).Patch(e.ctx, "app-1", types.MergePatchType,
			[]byte(`{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`), metav1.PatchOptions{}, "status")
		checkRefused(t, "the kubelet writing the pod's status", err, "")
		unlisted := e.podClient(other1)
		checkRefused(t, "an unlisted ServiceAccount relabelling its pod", patchPod(e.ctx, unlisted, "other-1", `{"metadata":{"labels":{"app":"x"}}}`), "")
	})
}
