package controller_test

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube"
)

// otherManager is the field manager of the other controller and tool the
// test plays.
const otherManager = "other-controller"

// writeGatewayStatus changes a Gateway's status as another controller
// would (its own field manager), retrying on conflicts with the
// controller's writes.
func (e *env) writeGatewayStatus(name string, change func(*gatewayv1.GatewayStatus)) {
	e.t.Helper()
	e.waitFor("status of Gateway "+name+" written by "+otherManager, func() (bool, string) {
		gw := e.gateway(name)
		change(&gw.Status)
		_, err := e.gw.GatewayV1().Gateways(e.ns).UpdateStatus(e.ctx, gw, metav1.UpdateOptions{FieldManager: otherManager})
		return err == nil, fmt.Sprint(err)
	})
}

// createClassOf creates the GatewayClass name of controller.
func (e *env) createClassOf(name, controller string) {
	e.t.Helper()
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(controller)}}
	if _, err := e.gw.GatewayV1().GatewayClasses().Create(e.ctx, class, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create GatewayClass %s: %v", name, err)
	}
}

// statusSummary is "Accepted Programmed [addresses] [other condition types]".
func statusSummary(gw *gatewayv1.Gateway) string {
	var others []string
	for _, c := range gw.Status.Conditions {
		if c.Type != "Accepted" && c.Type != "Programmed" {
			others = append(others, c.Type)
		}
	}
	return fmt.Sprintf("%s %s %v %v", conditionOf(gw.Status.Conditions, "Accepted"), conditionOf(gw.Status.Conditions, "Programmed"),
		addressValues(gw), others)
}

// waitGatewayStatus waits until statusSummary of the Gateway is want.
func (e *env) waitGatewayStatus(name, want string) *gatewayv1.Gateway {
	e.t.Helper()
	var gw *gatewayv1.Gateway
	e.waitFor(fmt.Sprintf("Gateway %s status %q", name, want), func() (bool, string) {
		gw = e.gateway(name)
		got := statusSummary(gw)
		return got == want, got
	})
	return gw
}

// TestIntegrationGatewayLeavesTheClass moves Gateways out of the
// controller's class in each way there is (another gatewayClassName, from
// a class of ours or from the seed's form; the class re-created for
// another controller; another controller faster than ours) and checks
// that the controller removes what it wrote in their status, and only
// that: what another controller or tool wrote stays.
func TestIntegrationGatewayLeavesTheClass(t *testing.T) {
	e := newEnv(t, "sllbrd-ctl-leave")
	e.createClass()
	e.createClassOf("other", "example.org/other")
	e.createClassOf("swap", kube.ControllerName)
	classes := map[string]string{"moves": className, "seed-form": kube.ControllerName, "swapped": "swap", "taken": className}
	for i, name := range []string{"moves", "seed-form", "swapped", "taken"} {
		g := gatewayObject(name)
		g.Spec.GatewayClassName = gatewayv1.ObjectName(classes[name])
		e.createGateway(g)
		svc := "service-" + name
		e.createService(svc, name, name, 0)
		e.createRoute("route-"+name, name, svc, fmt.Sprintf("20.0.0.%d", i+1))
	}
	r := e.startController("first")
	e.waitLeading(r)
	for i, name := range []string{"moves", "seed-form", "swapped", "taken"} {
		e.waitGatewayStatus(name, fmt.Sprintf("True/Accepted@1 False/NoReadyReplicas@1 [20.0.0.%d] [TargetsConfigured]", i+1))
	}
	// A condition of another tool's on two of them.
	healthy := func(s *gatewayv1.GatewayStatus) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: "example.org/Healthy", Status: metav1.ConditionTrue,
			Reason: "Probed", Message: "probed by another tool", ObservedGeneration: 1})
	}
	e.writeGatewayStatus("moves", healthy)
	e.writeGatewayStatus("swapped", healthy)

	t.Run("gatewayClassName changes", func(t *testing.T) {
		e.mergePatchGateway("moves", map[string]any{"spec": map[string]any{"gatewayClassName": "other"}})
		e.waitGatewayStatus("moves", "  [] [example.org/Healthy]")
	})

	t.Run("gatewayClassName changes from the seed's form", func(t *testing.T) {
		e.mergePatchGateway("seed-form", map[string]any{"spec": map[string]any{"gatewayClassName": "other"}})
		// Nothing is left: the CRD's default conditions come back.
		e.waitGatewayStatus("seed-form", "Unknown/Pending@0 Unknown/Pending@0 [] []")
	})

	t.Run("the class is re-created for another controller", func(t *testing.T) {
		if err := e.gw.GatewayV1().GatewayClasses().Delete(e.ctx, "swap", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitGatewayStatus("swapped", "False/UnknownGatewayClass@1 False/NoReadyReplicas@1 [] [TargetsConfigured example.org/Healthy]")
		e.createClassOf("swap", "example.org/other")
		e.waitGatewayStatus("swapped", "  [] [example.org/Healthy]")
	})

	var second *running
	t.Run("another controller wrote first", func(t *testing.T) {
		if err := r.stop(); err != nil {
			t.Fatalf("controller: %v", err)
		}
		e.mergePatchGateway("taken", map[string]any{"spec": map[string]any{"gatewayClassName": "other"}})
		e.writeGatewayStatus("taken", func(s *gatewayv1.GatewayStatus) {
			meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue,
				Reason: "Accepted", Message: "Accepted by the other controller", ObservedGeneration: 2})
			s.Addresses = []gatewayv1.GatewayStatusAddress{{Type: ptr.To(gatewayv1.IPAddressType), Value: "30.0.0.1"}}
		})
		second = e.startController("second")
		e.waitLeading(second)
		gw := e.waitGatewayStatus("taken", "True/Accepted@2  [30.0.0.1] []")
		if msg := messageOf(gw.Status.Conditions, "Accepted"); msg != "Accepted by the other controller" {
			t.Errorf("Accepted message %q", msg)
		}
	})

	// Nothing of ours is left to remove: the Gateways' status is not
	// written again when they are reconciled.
	t.Run("written once", func(t *testing.T) {
		succeeded := map[string]string{"kind": "Gateway", "result": "success"}
		reconciled := metricValue(t, second.metrics, "sllbrd_controller_reconciles_total", succeeded)
		versions := map[string]string{}
		for _, name := range []string{"moves", "seed-form", "swapped", "taken"} {
			e.mergePatchGateway(name, map[string]any{"metadata": map[string]any{"annotations": map[string]string{"touched": "yes"}}})
			versions[name] = e.gateway(name).ResourceVersion
		}
		e.waitFor("the Gateways reconciled", func() (bool, string) {
			n := metricValue(t, second.metrics, "sllbrd_controller_reconciles_total", succeeded)
			return n >= reconciled+4, fmt.Sprint(n)
		})
		time.Sleep(500 * time.Millisecond)
		for name, rv := range versions {
			if got := e.gateway(name).ResourceVersion; got != rv {
				t.Errorf("Gateway %s written again (%s -> %s): %s", name, rv, got, statusSummary(e.gateway(name)))
			}
		}
	})
}
