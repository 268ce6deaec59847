package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube/controller/sllbr"
	"github.com/sllbrd/sllbrd/kube/controller/status"
)

// FieldManager names the controller in the managedFields of what it
// writes: the fields of an SLLBR Deployment it applies (server-side apply)
// and the parts of a Gateway's status it last wrote are those of this
// manager.
const FieldManager = "sllbrd-controller"

// template returns the SLLBR Deployment template: the template ConfigMap's,
// or the built-in one while the ConfigMap does not exist; its sllbrd
// container has the controller's image when it names none.
func (c *Controller) template() (*appsv1.Deployment, error) {
	data, source, err := c.templateData()
	if err != nil {
		return nil, err
	}
	t, err := sllbr.ParseTemplate(data)
	if err == nil {
		err = sllbr.SetDefaultImage(t, c.image)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return t, nil
}

// templateData returns the template's text and where it comes from.
func (c *Controller) templateData() ([]byte, string, error) {
	cm, err := c.inf.configMaps.Get(c.templateConfigMap)
	switch {
	case apierrors.IsNotFound(err):
		if len(c.defaultTemplate) == 0 {
			return nil, "", fmt.Errorf("ConfigMap %s does not exist and there is no built-in template", c.templateConfigMap)
		}
		return c.defaultTemplate, "the built-in template", nil
	case err != nil:
		return nil, "", err
	}
	data, ok := cm.Data[sllbr.TemplateKey]
	if !ok {
		return nil, "", fmt.Errorf("ConfigMap %s has no key %s", c.templateConfigMap, sllbr.TemplateKey)
	}
	return []byte(data), fmt.Sprintf("ConfigMap %s key %s", c.templateConfigMap, sllbr.TemplateKey), nil
}

// deployments returns the SLLBR Deployments of a Gateway (normally one):
// those it controls by owner reference (UID), among those labelled as its.
// A Deployment with its labels and another owner is not the Gateway's.
func (c *Controller) deployments(gw *gatewayv1.Gateway) []*appsv1.Deployment {
	ds, _ := c.inf.deployments.List(labels.SelectorFromSet(sllbr.Selector(gw.Name)))
	return slices.DeleteFunc(ds, func(d *appsv1.Deployment) bool { return !metav1.IsControlledBy(d, gw) })
}

// deploymentReplicas returns the replicas of the Gateway's Deployment.
func (c *Controller) deploymentReplicas(gw *gatewayv1.Gateway) *status.Replicas {
	ds := c.deployments(gw)
	if len(ds) == 0 {
		return nil
	}
	r := &status.Replicas{}
	for _, d := range ds {
		r.Desired += ptr.Deref(d.Spec.Replicas, 1)
		r.Ready += d.Status.ReadyReplicas
	}
	return r
}

// ensureDeployment creates or updates the Gateway's Deployment with
// server-side apply (FieldManager, forced): the fields the controller sets
// are its own, and a change by anyone else to one of them (drift) is
// reverted; other fields, labels and annotations stay as others set them.
// It applies only when the rendered Deployment changed or drifted
// (sllbr.Drifted), conditionally on the resourceVersion read. A template
// problem or a name taken by someone else's Deployment is returned as a
// status problem (and an Event), the Deployment being left as it is; write
// failures are errors.
func (c *Controller) ensureDeployment(ctx context.Context, gw *gatewayv1.Gateway, params sllbr.Parameters) (*status.Problem, error) {
	tmpl, err := c.template()
	if err != nil {
		c.events.warn(gw, ReasonInvalidTemplate, "SLLBR Deployment template: "+err.Error())
		return &status.Problem{Reason: status.ReasonInvalidTemplate, Message: "template: " + err.Error()}, nil
	}
	c.events.resolved(gw, ReasonInvalidTemplate)
	want := sllbr.Render(tmpl, gw, params)
	var current *appsv1.Deployment
	for _, d := range c.deployments(gw) {
		if d.Name == want.Name {
			current = d
		}
	}
	if current == nil {
		var problem *status.Problem
		if current, problem, err = c.liveDeployment(ctx, gw, want.Name); problem != nil || err != nil {
			return problem, err
		}
	}
	if err := c.applyDeployment(ctx, gw, want, current); err != nil {
		return nil, err
	}
	return nil, c.deleteDeployments(ctx, gw, want)
}

// liveDeployment reads the Deployment name from the API server when the
// cache has none of the Gateway's by that name: nil when there is none;
// the Gateway's own when the cache is behind or its labels were changed
// (they narrow the watch); a DeploymentConflict when someone else's has
// the name.
func (c *Controller) liveDeployment(ctx context.Context, gw *gatewayv1.Gateway, name string) (*appsv1.Deployment, *status.Problem, error) {
	list, err := c.kube.AppsV1().Deployments(c.namespace).List(ctx,
		metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("read Deployment %s: %w", name, err)
	case len(list.Items) == 0:
		return nil, nil, nil
	case metav1.IsControlledBy(&list.Items[0], gw):
		return &list.Items[0], nil, nil
	}
	return nil, &status.Problem{Reason: status.ReasonDeploymentConflict,
		Message: fmt.Sprintf("Deployment %s exists and is not managed by sllbrd's controller for this Gateway", name)}, nil
}

// applyDeployment applies want unless current (nil: none) has it already;
// an update is conditional on current's resourceVersion.
func (c *Controller) applyDeployment(ctx context.Context, gw *gatewayv1.Gateway, want, current *appsv1.Deployment) error {
	if current != nil {
		drifted, err := sllbr.Drifted(current, want, FieldManager)
		if err != nil || !drifted {
			return err
		}
	}
	ac, err := sllbr.Apply(want)
	if err != nil {
		return err
	}
	if current != nil {
		ac.WithResourceVersion(current.ResourceVersion)
	}
	if _, err := c.kube.AppsV1().Deployments(c.namespace).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply Deployment %s: %w", want.Name, err)
	}
	if current == nil {
		c.log.Info("SLLBR Deployment created", "gateway", gw.Name, "deployment", want.Name)
	} else {
		c.log.Info("SLLBR Deployment applied (changed or drifted)", "gateway", gw.Name, "deployment", want.Name)
	}
	return nil
}

// deleteDeployments deletes the Gateway's Deployments except keep (a
// renamed template leaves the old one behind; a Gateway that is no longer
// ours keeps none).
func (c *Controller) deleteDeployments(ctx context.Context, gw *gatewayv1.Gateway, keep *appsv1.Deployment) error {
	var errs []error
	for _, d := range c.deployments(gw) {
		if keep != nil && d.Name == keep.Name {
			continue
		}
		pre := metav1.Preconditions{UID: &d.UID, ResourceVersion: &d.ResourceVersion}
		err := c.kube.AppsV1().Deployments(c.namespace).Delete(ctx, d.Name, metav1.DeleteOptions{Preconditions: &pre})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete Deployment %s: %w", d.Name, err))
			continue
		}
		c.log.Info("SLLBR Deployment deleted", "gateway", gw.Name, "deployment", d.Name)
	}
	return errors.Join(errs...)
}
