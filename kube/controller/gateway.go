package controller

import (
	"context"
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/kube/controller/sllbr"
	"github.com/sllbrd/sllbrd/kube/controller/status"
	"github.com/sllbrd/sllbrd/kube/translate"
)

// reconcileGateway writes a Gateway's SLLBR Deployment and status.
func (c *Controller) reconcileGateway(ctx context.Context, name string) error {
	gw, err := c.inf.gateways.Get(name)
	if apierrors.IsNotFound(err) {
		return nil // the Deployment goes with it (owner reference)
	}
	if err != nil {
		return err
	}
	own, why, err := c.owner(gw)
	switch {
	case err != nil:
		return err
	case own == notOurs:
		if err := c.deleteDeployments(ctx, gw, nil); err != nil {
			return err
		}
		return c.releaseGatewayStatus(ctx, gw)
	case own == unknownClass:
		return c.writeGatewayStatus(ctx, gw, status.Gateway{
			Generation:  gw.Generation,
			NotAccepted: &status.Problem{Reason: status.ReasonUnknownGatewayClass, Message: why},
			Deployment:  c.deploymentReplicas(gw),
		})
	}
	in := status.Gateway{Generation: gw.Generation, VIPs: c.gatewayVIPs(gw)}
	params, notAccepted := c.acceptance(gw)
	in.NotAccepted = notAccepted
	if notAccepted == nil {
		if in.DeploymentProblem, err = c.ensureDeployment(ctx, gw, params); err != nil {
			return err
		}
	}
	in.Deployment = c.deploymentReplicas(gw)
	in.Pods = c.podProblems(gw)
	in.RoutesLeftOut = c.gatewayRoutesLeftOut(gw.Name)
	return c.writeGatewayStatus(ctx, gw, in)
}

// acceptance checks the Gateway's annotations and parameters: the
// parameters to size the Deployment with, or why the Gateway is not
// accepted (also reported as an Event for invalid parameters).
func (c *Controller) acceptance(gw *gatewayv1.Gateway) (sllbr.Parameters, *status.Problem) {
	if _, problems := translate.Gateway(gw); len(problems) > 0 {
		return sllbr.Parameters{}, &status.Problem{Reason: status.ReasonInvalidAnnotations, Message: status.Join(problems)}
	}
	params, err := c.parameters(gw)
	if err != nil {
		msg := "spec.infrastructure.parametersRef: " + err.Error() + "; the SLLBR Deployment is left as it was"
		c.events.warn(gw, ReasonInvalidParameters, msg)
		return params, &status.Problem{Reason: string(gatewayv1.GatewayReasonInvalidParameters), Message: msg}
	}
	c.events.resolved(gw, ReasonInvalidParameters)
	return params, nil
}

// parameters reads the SLLBRConfig of the Gateway's parametersRef (none:
// zero Parameters, the template's replicas and resources).
func (c *Controller) parameters(gw *gatewayv1.Gateway) (sllbr.Parameters, error) {
	inf := gw.Spec.Infrastructure
	if inf == nil || inf.ParametersRef == nil {
		return sllbr.Parameters{}, nil
	}
	ref := inf.ParametersRef
	if ref.Group != "" || ref.Kind != "ConfigMap" {
		return sllbr.Parameters{}, fmt.Errorf("group %q kind %q: only a core ConfigMap (group \"\", kind ConfigMap) is supported", ref.Group, ref.Kind)
	}
	cm, err := c.inf.configMaps.Get(ref.Name)
	if err != nil {
		return sllbr.Parameters{}, fmt.Errorf("ConfigMap %s: %w", ref.Name, err)
	}
	text, ok := cm.Data[sllbr.ParametersKey]
	if !ok {
		return sllbr.Parameters{}, fmt.Errorf("ConfigMap %s has no key %s", ref.Name, sllbr.ParametersKey)
	}
	p, err := sllbr.ParseParameters(text)
	if err != nil {
		return sllbr.Parameters{}, fmt.Errorf("ConfigMap %s key %s: %w", ref.Name, sllbr.ParametersKey, err)
	}
	return p, nil
}

// gatewayVIPs are the destinations of the Gateway's accepted L34Routes.
func (c *Controller) gatewayVIPs(gw *gatewayv1.Gateway) []netip.Addr {
	svcs, _ := c.inf.services.List(labels.Everything())
	state, _, err := translate.Translate(translate.Snapshot{
		Gateway: gw, Routes: listCustom[*v1alpha1.L34Route](c.inf.routes), Services: svcs,
	})
	if err != nil {
		return nil
	}
	var vips []netip.Addr
	for _, r := range state.Routes {
		for _, d := range r.Destinations {
			vips = append(vips, d.Addr())
		}
	}
	return vips
}

// writeGatewayStatus writes the Gateway's status if it differs.
func (c *Controller) writeGatewayStatus(ctx context.Context, gw *gatewayv1.Gateway, in status.Gateway) error {
	addrs, conds := status.GatewayStatus(in)
	next := gw.DeepCopy()
	next.Status.Addresses = addrs
	next.Status.Conditions = status.MergeConditions(gw.Status.Conditions, conds, metav1.Now())
	if equality.Semantic.DeepEqual(next.Status, gw.Status) {
		return nil
	}
	if _, err := c.gateways.GatewayV1().Gateways(c.namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("update status of Gateway %s: %w", gw.Name, err)
	}
	return nil
}

// releaseGatewayStatus removes from the status of a Gateway that is no
// longer ours (it moved to another class, or its class to another
// controller) the conditions and addresses the controller wrote and still
// owns (status.Written); what another controller wrote stays.
func (c *Controller) releaseGatewayStatus(ctx context.Context, gw *gatewayv1.Gateway) error {
	conds, addrs, err := status.Written(gw, FieldManager)
	if err != nil {
		return fmt.Errorf("Gateway %s: %w", gw.Name, err)
	}
	next := gw.DeepCopy()
	next.Status = status.Without(gw.Status, conds, addrs)
	if equality.Semantic.DeepEqual(next.Status, gw.Status) {
		return nil
	}
	if _, err := c.gateways.GatewayV1().Gateways(c.namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("remove the controller's status of Gateway %s (no longer of its class): %w", gw.Name, err)
	}
	c.log.Info("Gateway left the class: its conditions and addresses removed", "gateway", gw.Name, "conditions", conds, "addresses", addrs)
	return nil
}

// reconcileGatewayClass writes the Accepted condition of our classes.
func (c *Controller) reconcileGatewayClass(ctx context.Context, name string) error {
	class, err := c.inf.classes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || class.Spec.ControllerName != kube.ControllerName {
		return err
	}
	next := class.DeepCopy()
	next.Status.Conditions = status.MergeConditions(class.Status.Conditions, status.GatewayClassConditions(class), metav1.Now())
	if equality.Semantic.DeepEqual(next.Status, class.Status) {
		return nil
	}
	if _, err := c.gateways.GatewayV1().GatewayClasses().UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("update status of GatewayClass %s: %w", name, err)
	}
	return nil
}
