package controller

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube"
)

// ownership says whether a Gateway is the controller's.
type ownership int

const (
	// notOurs: the class belongs to another controller; nothing is written.
	notOurs ownership = iota
	// unknownClass: the class does not exist; only the Gateway's status is
	// written (Accepted=False/UnknownGatewayClass).
	unknownClass
	// ours: the class has our controllerName, or the Gateway names our
	// controllerName as its class (the seed's form).
	ours
)

// owner decides whether gw is owned (see the package documentation).
func (c *Controller) owner(gw *gatewayv1.Gateway) (ownership, string, error) {
	name := string(gw.Spec.GatewayClassName)
	if name == kube.ControllerName {
		return ours, "", nil
	}
	class, err := c.inf.classes.Get(name)
	switch {
	case apierrors.IsNotFound(err):
		return unknownClass, fmt.Sprintf("GatewayClass %q does not exist (sllbrd handles classes with controllerName %s)",
			name, kube.ControllerName), nil
	case err != nil:
		return notOurs, "", err
	case class.Spec.ControllerName == kube.ControllerName:
		return ours, "", nil
	}
	return notOurs, "", nil
}
