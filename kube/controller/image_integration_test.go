package controller_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sllbrd/sllbrd/deploy"
	"github.com/sllbrd/sllbrd/kube/controller"
	"github.com/sllbrd/sllbrd/kube/controller/sllbr"
)

// runUntilError runs a controller (no leader election, the built-in
// template) that must fail at start, and returns its error.
func (e *env) runUntilError(opts ...controller.Option) error {
	e.t.Helper()
	opts = append([]controller.Option{controller.WithLeaderElection(controller.LeaderElection{}),
		controller.WithTemplate(controller.DefaultTemplateConfigMap, deploy.SLLBRDeploymentTemplate)}, opts...)
	ctl, err := controller.New(e.ctlSA, e.ns, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, waitTimeout)
	defer cancel()
	err = ctl.Run(ctx)
	if ctx.Err() != nil {
		e.t.Fatalf("the controller did not fail within %v", waitTimeout)
	}
	return err
}

// sllbrImages returns the image of each SLLBR Deployment and its render
// hash.
func (e *env) sllbrImages(names ...string) (map[string]string, map[string]string) {
	e.t.Helper()
	images, hashes := map[string]string{}, map[string]string{}
	for _, n := range names {
		d, err := e.kube.AppsV1().Deployments(e.ns).Get(e.ctx, n, metav1.GetOptions{})
		if err != nil {
			continue
		}
		images[n], hashes[n] = d.Spec.Template.Spec.Containers[0].Image, d.Annotations[sllbr.AnnotationHash]
	}
	return images, hashes
}

// waitImages waits until every named SLLBR Deployment runs image.
func (e *env) waitImages(image string, names ...string) map[string]string {
	e.t.Helper()
	var hashes map[string]string
	e.waitFor("every SLLBR Deployment runs "+image, func() (bool, string) {
		var images map[string]string
		images, hashes = e.sllbrImages(names...)
		for _, n := range names {
			if images[n] != image {
				return false, strings.TrimSpace(strings.Join([]string{n, images[n]}, " "))
			}
		}
		return true, ""
	})
	return hashes
}

// TestIntegrationSLLBRImageIsTheControllers runs the controller in its own
// Pod object (as the ServiceAccount of deploy/controller, so get on its pod
// is granted): the SLLBR Deployments run the controller's image; a rollout
// of the controller to a new image (a new pod takes the Lease) rolls every
// SLLBR Deployment to it; a template that names an image keeps it; a
// controller that cannot tell its image fails at start with a clear error.
func TestIntegrationSLLBRImageIsTheControllers(t *testing.T) {
	e := newEnv(t, "sllbrd-ctl-image")
	e.createClass()
	e.createGateway(gatewayObject("sllb-a"))
	e.createGateway(gatewayObject("sllb-b"))
	deployments := []string{"sllbrd-sllb-a", "sllbrd-sllb-b"}

	t.Run("no image and no pod: an error at start", func(t *testing.T) {
		err := e.runUntilError()
		if !errors.Is(err, sllbr.ErrNoImage) || !strings.Contains(err.Error(), "the built-in template") {
			t.Errorf("Run: %v, want ErrNoImage about the built-in template", err)
		}
		err = e.runUntilError(controller.WithImageFromPod(e.ns, "no-such-pod", "controller"))
		if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "read its own pod "+e.ns+"/no-such-pod") {
			t.Errorf("Run with a missing pod: %v, want NotFound (and not Forbidden: get on pods is granted)", err)
		}
		e.createControllerPod("sllbrd-controller-odd", controllerImage)
		err = e.runUntilError(controller.WithImageFromPod(e.ns, "sllbrd-controller-odd", "manager"))
		if err == nil || !strings.Contains(err.Error(), `has no container "manager" with an image (containers: controller)`) {
			t.Errorf("Run with another container name: %v", err)
		}
		if ds, _ := e.kube.AppsV1().Deployments(e.ns).List(e.ctx, metav1.ListOptions{}); len(ds.Items) != 0 {
			t.Errorf("a controller that failed at start made %d Deployments", len(ds.Items))
		}
	})

	const v1, v2 = "registry.example.org/sllbrd:v1.0.0", "registry.example.org/sllbrd:v1.1.0"
	e.createControllerPod("sllbrd-controller-v1", v1)
	old := e.startController("v1", controller.WithImageFromPod(e.ns, "sllbrd-controller-v1", controllerContainer))
	e.waitLeading(old)
	before := e.waitImages(v1, deployments...)

	var next *running
	t.Run("a rollout of the controller rolls every SLLBR Deployment", func(t *testing.T) {
		// As the Deployment controller rolls deploy/controller: a new pod
		// with the new image starts, then the old one stops and releases
		// the Lease.
		e.createControllerPod("sllbrd-controller-v2", v2)
		next = e.startController("v2", controller.WithImageFromPod(e.ns, "sllbrd-controller-v2", controllerContainer))
		e.waitFor("v2 synced", func() (bool, string) { ok, why := next.ctl.Ready(); return ok, strings.Join(why, "; ") })
		if err := old.stop(); err != nil {
			t.Fatalf("the old controller: %v", err)
		}
		e.waitLeading(next)
		after := e.waitImages(v2, deployments...)
		for _, n := range deployments {
			if after[n] == before[n] || after[n] == "" {
				t.Errorf("%s: render hash %q before and %q after the image changed", n, before[n], after[n])
			}
		}
	})

	t.Run("a template that names an image keeps it", func(t *testing.T) {
		tmpl := strings.Replace(string(deploy.SLLBRDeploymentTemplate), "      - name: sllbrd\n", "      - name: sllbrd\n        image: example.org/chosen:v7\n", 1)
		if tmpl == string(deploy.SLLBRDeploymentTemplate) {
			t.Fatal("the shipped template has no container sllbrd to give an image")
		}
		e.setConfigMap(controller.DefaultTemplateConfigMap, sllbr.TemplateKey, tmpl)
		e.waitImages("example.org/chosen:v7", deployments...)
		d, err := e.kube.AppsV1().Deployments(e.ns).Get(e.ctx, deployments[0], metav1.GetOptions{})
		if err != nil || d.Spec.Template.Spec.Containers[0].ImagePullPolicy != "IfNotPresent" {
			t.Errorf("the rest of the template is lost: %+v, %v", d.Spec.Template.Spec.Containers, err)
		}
	})

	t.Run("a template edited to need an image the controller lacks", func(t *testing.T) {
		// A controller that knows no image starts on a template that names
		// one; a template without one is then a problem of each Gateway,
		// whose Deployment is kept, never one without an image.
		if next == nil {
			t.Fatal("no v2 controller: the rollout failed")
		}
		if err := next.stop(); err != nil {
			t.Fatalf("the v2 controller: %v", err)
		}
		imageless := e.startController("imageless", controller.WithImage(""))
		e.waitLeading(imageless)
		e.setConfigMap(controller.DefaultTemplateConfigMap, sllbr.TemplateKey, string(deploy.SLLBRDeploymentTemplate))
		for _, gw := range []string{"sllb-a", "sllb-b"} {
			e.waitEvent("Gateway", gw, controller.ReasonInvalidTemplate, "names no image")
		}
		if images, _ := e.sllbrImages(deployments...); images[deployments[0]] != "example.org/chosen:v7" || images[deployments[1]] != "example.org/chosen:v7" {
			t.Errorf("images %v: the Deployments changed with a template that needs an image", images)
		}
	})
}
