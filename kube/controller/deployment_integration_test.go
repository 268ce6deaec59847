package controller_test

import (
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/controller"
	"github.com/sllbrd/sllbrd/kube/controller/sllbr"
)

const deploymentName = "sllbrd-sllb-a"

func (e *env) deployment() (*appsv1.Deployment, error) {
	return e.kube.AppsV1().Deployments(e.ns).Get(e.ctx, deploymentName, metav1.GetOptions{})
}

// waitDeployment waits until the SLLBR Deployment satisfies ok.
func (e *env) waitDeployment(what string, ok func(*appsv1.Deployment) bool) *appsv1.Deployment {
	e.t.Helper()
	var d *appsv1.Deployment
	e.waitFor("SLLBR Deployment: "+what, func() (bool, string) {
		var err error
		d, err = e.deployment()
		if err != nil {
			return false, err.Error()
		}
		return ok(d), fmt.Sprintf("replicas %d resources %v image %s", *d.Spec.Replicas,
			d.Spec.Template.Spec.Containers[0].Resources, d.Spec.Template.Spec.Containers[0].Image)
	})
	return d
}

// setParameters rewrites config.conf of the example's ConfigMap.
func (e *env) setConfigMap(name, key, value string) {
	e.t.Helper()
	cms := e.kube.CoreV1().ConfigMaps(e.ns)
	cm, err := cms.Get(e.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{key: value}}
		if _, err := cms.Create(e.ctx, cm, metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
		return
	}
	if err != nil {
		e.t.Fatal(err)
	}
	cm.Data[key] = value
	if _, err := cms.Update(e.ctx, cm, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// seedParameters is deploy/examples/sllbrconfig.yaml's SLLBRConfig with
// its replicas replaced.
func seedParameters(t *testing.T, replicas string) string {
	t.Helper()
	objs, err := kubetest.ReadObjects(filepath.Join(deployDir, "examples", "sllbrconfig.yaml"))
	if err != nil || len(objs) != 1 {
		t.Fatalf("sllbrconfig.yaml: %d objects, %v", len(objs), err)
	}
	text, _, _ := unstructured.NestedString(objs[0].Object, "data", sllbr.ParametersKey)
	if !strings.Contains(text, "replicas: 2") {
		t.Fatalf("sllbrconfig.yaml: no replicas: 2 in %q", text)
	}
	return strings.Replace(text, "replicas: 2", "replicas: "+replicas, 1)
}

// TestIntegrationDeployment applies the seed's objects (deploy/examples)
// and checks the SLLBR Deployment the controller makes, and its updates
// when the parameters, the template or the Gateway change.
func TestIntegrationDeployment(t *testing.T) {
	e := newEnv(t, "sllbrd-ctl-deploy")
	e.createFiles(filepath.Join(deployDir, "examples", "gatewayclass.yaml"), filepath.Join(deployDir, "examples", "gateway.yaml"),
		filepath.Join(deployDir, "examples", "sllbrconfig.yaml"))
	r := e.startController("only")
	e.waitLeading(r)
	gw := e.gateway("sllb-a")

	t.Run("content", func(t *testing.T) {
		d := e.waitDeployment("created", func(*appsv1.Deployment) bool { return true })
		if len(d.OwnerReferences) != 1 || d.OwnerReferences[0].UID != gw.UID || d.OwnerReferences[0].Kind != "Gateway" || !*d.OwnerReferences[0].Controller {
			t.Errorf("owners %+v: the Deployment must go with the Gateway", d.OwnerReferences)
		}
		if got := d.Spec.Selector.MatchLabels; len(got) != 2 || got[kube.LabelGatewayName] != "sllb-a" || got[kube.LabelComponent] != "sllbr" {
			t.Errorf("selector %v", got)
		}
		pod := d.Spec.Template
		if pod.Labels[kube.LabelGatewayName] != "sllb-a" || pod.Labels[kube.LabelComponent] != "sllbr" {
			t.Errorf("pod labels %v", pod.Labels)
		}
		want := string(gw.Spec.Infrastructure.Annotations[kube.AnnotationMultusNetworks])
		if got := pod.Annotations[kube.AnnotationMultusNetworks]; got != want {
			t.Errorf("pod Multus networks %q, want the Gateway's %q", got, want)
		}
		c := pod.Spec.Containers[0]
		if !slices.Contains(c.Args, "--gateway=sllb-a") || *d.Spec.Replicas != 2 {
			t.Errorf("args %v replicas %d", c.Args, *d.Spec.Replicas)
		}
		// The seed's sllb + router: 250m + 250m, 64Mi + 64Mi; limits 500m + 500m, 128Mi + 128Mi.
		res := c.Resources
		if res.Requests.Cpu().MilliValue() != 500 || res.Requests.Memory().Value() != 128<<20 ||
			res.Limits.Cpu().MilliValue() != 1000 || res.Limits.Memory().Value() != 256<<20 {
			t.Errorf("resources %v", res)
		}
		if d.Annotations[sllbr.AnnotationHash] == "" {
			t.Errorf("no hash annotation")
		}
	})

	t.Run("parametersRef changes", func(t *testing.T) {
		e.setConfigMap("sllb-a-config", "config.conf", seedParameters(t, "3"))
		e.waitDeployment("3 replicas", func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 3 })
		before, _ := e.deployment()
		e.setConfigMap("sllb-a-config", "config.conf", seedParameters(t, "-1"))
		g := e.waitGateway("sllb-a", "False/InvalidParameters@1", "False/NoReadyReplicas@1")
		if msg := messageOf(g.Status.Conditions, "Accepted"); !strings.Contains(msg, "replicas -1 is not in 0..64") {
			t.Errorf("message %q", msg)
		}
		e.waitEvent("Gateway", "sllb-a", "InvalidParameters", "replicas -1")
		if after, _ := e.deployment(); after.ResourceVersion != before.ResourceVersion {
			t.Errorf("the Deployment changed while the parameters were invalid")
		}
		e.setConfigMap("sllb-a-config", "config.conf", seedParameters(t, "1"))
		e.waitDeployment("1 replica", func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 1 })
		e.waitGateway("sllb-a", "True/Accepted@1", "False/NoReadyReplicas@1")
	})

	t.Run("template changes", func(t *testing.T) {
		tmpl, err := os.ReadFile(filepath.Join(deployDir, "sllbrd", "deployment.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		// The shipped template names no image (the SLLBR pods run the
		// controller's); one named in the template is kept.
		if d, _ := e.deployment(); d.Spec.Template.Spec.Containers[0].Image != controllerImage {
			t.Errorf("image %q, want the controller's %q", d.Spec.Template.Spec.Containers[0].Image, controllerImage)
		}
		edited := regexp.MustCompile(`(?m)^(\s*)- name: sllbrd\n`).ReplaceAllString(string(tmpl), "$1- name: sllbrd\n$1  image: registry.example.org/sllbrd:v2\n")
		if edited == string(tmpl) {
			t.Fatal("the shipped template has no container sllbrd to give an image")
		}
		e.setConfigMap(controller.DefaultTemplateConfigMap, sllbr.TemplateKey, edited)
		e.waitDeployment("the edited template's image", func(d *appsv1.Deployment) bool {
			return d.Spec.Template.Spec.Containers[0].Image == "registry.example.org/sllbrd:v2"
		})
		before, _ := e.deployment()
		e.setConfigMap(controller.DefaultTemplateConfigMap, sllbr.TemplateKey, strings.Replace(edited, "- name: sllbrd\n", "- name: lb\n", 1))
		e.waitEvent("Gateway", "sllb-a", "InvalidTemplate", `no container named "sllbrd"`)
		e.setReadyReplicas("sllb-a", 1)
		g := e.waitGateway("sllb-a", "True/Accepted@1", "True/Programmed@1")
		if msg := messageOf(g.Status.Conditions, "Programmed"); !strings.Contains(msg, "not up to date") {
			t.Errorf("Programmed message %q does not say the template is invalid", msg)
		}
		if after, _ := e.deployment(); after.Spec.Template.Spec.Containers[0].Image != before.Spec.Template.Spec.Containers[0].Image ||
			after.Generation != before.Generation {
			t.Errorf("the Deployment changed with an invalid template")
		}
	})

	t.Run("a Gateway that is no longer ours loses its Deployment", func(t *testing.T) {
		class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"},
			Spec: gatewayv1.GatewayClassSpec{ControllerName: "example.org/other"}}
		if _, err := e.gw.GatewayV1().GatewayClasses().Create(e.ctx, class, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// A patch, not a read and an update: the controller writes the
		// Gateway's status meanwhile.
		e.mergePatchGateway("sllb-a", map[string]any{"spec": map[string]any{"gatewayClassName": "someone-elses"}})
		e.waitFor("the Deployment deleted", func() (bool, string) {
			_, err := e.deployment()
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})
}

// counting returns a copy of cfg that counts its requests of method to
// paths ending in suffix.
func counting(cfg *rest.Config, method, suffix string, n *atomic.Int64) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method == method && strings.HasSuffix(path.Dir(req.URL.Path), suffix) {
				n.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	return c
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// patchDeployment changes the SLLBR Deployment as another tool would (its
// own field manager).
func (e *env) patchDeployment(patch string) {
	e.t.Helper()
	_, err := e.kube.AppsV1().Deployments(e.ns).Patch(e.ctx, deploymentName, types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: otherManager})
	if err != nil {
		e.t.Fatalf("patch the SLLBR Deployment with %s: %v", patch, err)
	}
}

// TestIntegrationDeploymentDrift edits the SLLBR Deployment by hand and
// as other tools do: a change of a field the controller sets is reverted,
// everything else (other tools' annotations and labels, a restart's
// annotation, fields the controller does not set) stays, also across the
// controller's own updates; and a Deployment that has not drifted is not
// written.
func TestIntegrationDeploymentDrift(t *testing.T) {
	e := newEnv(t, "sllbrd-ctl-drift")
	e.createFiles(filepath.Join(deployDir, "examples", "gatewayclass.yaml"), filepath.Join(deployDir, "examples", "gateway.yaml"),
		filepath.Join(deployDir, "examples", "sllbrconfig.yaml"))
	var applies atomic.Int64
	r := e.startControllerWith(counting(e.ctlSA, http.MethodPatch, "/deployments", &applies), "only")
	e.waitLeading(r)
	e.waitDeployment("created", func(*appsv1.Deployment) bool { return true })

	// Other tools: annotations and labels of their own, a rollout restart,
	// a field the controller does not set.
	e.patchDeployment(`{"metadata":{"annotations":{"example.org/owner":"team-blue"},"labels":{"example.org/tier":"edge"}},` +
		`"spec":{"minReadySeconds":5,"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-11-27T10:00:00Z"}}}}}`)
	// Hand edits of the controller's fields: replicas, the container's
	// arguments, a label the watch selects on.
	e.patchDeployment(`{"metadata":{"labels":{"app.kubernetes.io/managed-by":null}},"spec":{"replicas":5,` +
		`"template":{"spec":{"containers":[{"name":"sllbrd","args":["--gateway=elsewhere"]}]}}}}`)
	kept := func(d *appsv1.Deployment) string {
		var missing []string
		if d.Annotations["example.org/owner"] != "team-blue" {
			missing = append(missing, "annotation")
		}
		if d.Labels["example.org/tier"] != "edge" {
			missing = append(missing, "label")
		}
		if d.Spec.MinReadySeconds != 5 {
			missing = append(missing, "minReadySeconds")
		}
		if d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
			missing = append(missing, "restartedAt")
		}
		return strings.Join(missing, " ")
	}
	reverted := func(d *appsv1.Deployment, replicas int32) bool {
		return *d.Spec.Replicas == replicas && d.Labels["app.kubernetes.io/managed-by"] == sllbr.ManagedBy &&
			slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--gateway=sllb-a") &&
			slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--drain=10s")
	}
	d := e.waitDeployment("hand edits reverted", func(d *appsv1.Deployment) bool { return reverted(d, 2) })
	if missing := kept(d); missing != "" {
		t.Errorf("the controller dropped what other tools set: %s", missing)
	}

	// The controller's own update keeps them too.
	e.setConfigMap("sllb-a-config", "config.conf", seedParameters(t, "3"))
	d = e.waitDeployment("3 replicas", func(d *appsv1.Deployment) bool { return reverted(d, 3) })
	if missing := kept(d); missing != "" {
		t.Errorf("an update by the controller dropped what other tools set: %s", missing)
	}

	// A field the template stops setting goes; other tools' fields stay.
	tmpl, err := os.ReadFile(filepath.Join(deployDir, "sllbrd", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	withLabel := strings.Replace(string(tmpl), "    app.kubernetes.io/instance: sllb-a\nspec:", "    app.kubernetes.io/instance: sllb-a\n    example.org/from-template: \"yes\"\nspec:", 1)
	if withLabel == string(tmpl) {
		t.Fatal("the shipped template's labels are not where the test adds one")
	}
	e.setConfigMap(controller.DefaultTemplateConfigMap, sllbr.TemplateKey, withLabel)
	e.waitDeployment("the template's new label", func(d *appsv1.Deployment) bool { return d.Labels["example.org/from-template"] == "yes" })
	e.setConfigMap(controller.DefaultTemplateConfigMap, sllbr.TemplateKey, string(tmpl))
	d = e.waitDeployment("the label the template dropped gone", func(d *appsv1.Deployment) bool {
		_, ok := d.Labels["example.org/from-template"]
		return !ok
	})
	if missing := kept(d); missing != "" {
		t.Errorf("a template change dropped what other tools set: %s", missing)
	}

	// Settled: reconciles of the Gateway (a status change of its
	// Deployment, an edit by another tool) write nothing.
	before := applies.Load()
	if before < 5 {
		t.Errorf("%d applies counted: the creation, the revert and three updates at least", before)
	}
	succeeded := map[string]string{"kind": "Gateway", "result": "success"}
	reconciled := metricValue(t, r.metrics, "sllbrd_controller_reconciles_total", succeeded)
	e.setReadyReplicas("sllb-a", 1)
	e.patchDeployment(`{"metadata":{"annotations":{"example.org/owner":"team-green"}}}`)
	e.waitFor("the Gateway reconciled twice", func() (bool, string) {
		n := metricValue(t, r.metrics, "sllbrd_controller_reconciles_total", succeeded)
		return n >= reconciled+2, fmt.Sprint(n)
	})
	if n := applies.Load() - before; n != 0 {
		t.Errorf("%d applies of a Deployment that had not drifted", n)
	}
	if d, _ := e.deployment(); d.Annotations["example.org/owner"] != "team-green" {
		t.Errorf("another tool's annotation reverted: %v", d.Annotations)
	}
}
