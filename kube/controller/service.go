package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/controller/endpoints"
	"github.com/sllbrd/sllbrd/kube/controller/identifiers"
	"github.com/sllbrd/sllbrd/kube/translate"
	"github.com/sllbrd/sllbrd/model"
)

// podSelector is a Service's selector without the dummy key, nil when
// nothing is left (a Service without a selector has no managed endpoints).
func podSelector(svc *corev1.Service) labels.Selector {
	sel := maps.Clone(svc.Spec.Selector)
	delete(sel, kube.LabelDummyServiceSelector)
	if len(sel) == 0 {
		return nil
	}
	return labels.SelectorFromSet(sel)
}

// ourSlices returns the slices of a Service managed by the controller.
func (c *Controller) ourSlices(service string) []*discoveryv1.EndpointSlice {
	ss, _ := c.inf.slices.List(labels.SelectorFromSet(labels.Set{kube.LabelServiceName: service}))
	return ss
}

// reconcileService writes the EndpointSlices of a Service of an owned
// Gateway, and deletes the controller's slices of any other Service.
func (c *Controller) reconcileService(ctx context.Context, name string) error {
	existing := c.ourSlices(name)
	if c.slices.stale(name, existing) {
		return errStale
	}
	svc, err := c.inf.services.Get(name)
	if apierrors.IsNotFound(err) {
		c.forgetService(name)
		return c.writeSlices(ctx, name, endpoints.Plan{Delete: existing})
	}
	if err != nil {
		return err
	}
	gw, keep, err := c.serviceGateway(svc)
	if err != nil || keep {
		return err // keep: the last good slices stay (see serviceGateway)
	}
	sel := podSelector(svc)
	if gw == nil || sel == nil {
		c.forgetService(name)
		return c.writeSlices(ctx, name, endpoints.Plan{Delete: existing})
	}
	maxEndpoints, err := translate.MaxEndpoints(svc)
	if err != nil {
		c.events.warn(svc, ReasonInvalidService, "annotation "+kube.AnnotationMaxEndpoints+": "+err.Error()+"; its EndpointSlices are left as they were")
		return nil
	}
	c.events.resolved(svc, ReasonInvalidService)
	pods, _ := c.inf.pods.List(sel)
	cands, skipped := endpoints.Candidates(pods, *gw)
	c.holdReadiness(name, cands, existing)
	assigned := identifiers.Assign(maxEndpoints, endpoints.Identify(cands), endpoints.Claims(existing))
	var eps []endpoints.Endpoint
	for _, cand := range cands {
		if id, ok := assigned.IDs[string(cand.Pod.UID)]; ok {
			eps = append(eps, endpoints.Endpoint{Candidate: cand, ID: id})
		}
	}
	c.reportPods(svc, maxEndpoints, cands, skipped, assigned)
	return c.writeSlices(ctx, name, endpoints.PlanSlices(svc, eps, existing))
}

// serviceGateway returns the model of the owned Gateway that handles svc,
// nil when none does (the controller's slices go). keep is true when the
// slices must be left as they are: the Gateway's class is unknown, or its
// annotations are invalid (a typo must not empty every Service).
func (c *Controller) serviceGateway(svc *corev1.Service) (gw *model.Gateway, keep bool, err error) {
	name := svc.Labels[kube.LabelServiceProxyName]
	if name == "" {
		return nil, false, nil
	}
	g, err := c.inf.gateways.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	own, _, err := c.owner(g)
	switch {
	case err != nil:
		return nil, false, err
	case own == notOurs:
		return nil, false, nil
	case own == unknownClass:
		return nil, true, nil
	}
	model, problems := translate.Gateway(g)
	if len(problems) > 0 {
		return nil, true, nil
	}
	return &model, false, nil
}

// reportPods records the Service's metrics and the Events of its pods:
// pods without a usable address (once per reason) and pods past the limit.
func (c *Controller) reportPods(svc *corev1.Service, maxEndpoints int, cands []endpoints.Candidate,
	skipped []endpoints.Skipped, assigned identifiers.Assignment) {
	byFault := map[string]int{}
	faults := []endpoints.Fault{endpoints.FaultNoNetworkStatus, endpoints.FaultInvalidNetworkStatus, endpoints.FaultNoAddressOnNetwork}
	for _, f := range faults {
		byFault[string(f)] = 0
	}
	for _, s := range skipped {
		byFault[string(s.Fault)]++
		c.events.warn(s.Pod, string(s.Fault), fmt.Sprintf("not an endpoint of Service %s: %s", svc.Name, s.Message))
	}
	for _, cand := range cands {
		for _, f := range faults {
			c.events.resolved(cand.Pod, string(f))
		}
		if _, ok := assigned.IDs[string(cand.Pod.UID)]; ok {
			c.events.resolved(cand.Pod, ReasonEndpointsOverLimit)
		}
	}
	for _, p := range assigned.OverLimit {
		c.events.warn(podByUID(cands, p.UID), ReasonEndpointsOverLimit, fmt.Sprintf(
			"not an endpoint of Service %s: all %d identifiers (%s) are in use; it gets the next one that frees",
			svc.Name, maxEndpoints, kube.AnnotationMaxEndpoints))
	}
	// One stable note: the Events API folds later notes of the same reason
	// into the first one's series; the pods' own Events name them.
	if len(assigned.OverLimit) > 0 {
		c.events.warn(svc, ReasonEndpointsOverLimit, fmt.Sprintf(
			"pods are left out: all %d identifiers (%s) are in use; each has an %s Event, and sllbrd_controller_service_pods_over_limit counts them",
			maxEndpoints, kube.AnnotationMaxEndpoints, ReasonEndpointsOverLimit))
	} else {
		c.events.resolved(svc, ReasonEndpointsOverLimit)
	}
	c.metrics.SetService(svc.Name, len(assigned.IDs), len(assigned.OverLimit), byFault)
}

func podByUID(cands []endpoints.Candidate, uid string) *corev1.Pod {
	for _, c := range cands {
		if string(c.Pod.UID) == uid {
			return c.Pod
		}
	}
	return nil
}

// writeSlices carries out a plan: creates and updates first, deletes last
// (an endpoint moving between slices is never absent from all of them),
// each write conditional on what was read, and records what was written
// for the staleness check.
func (c *Controller) writeSlices(ctx context.Context, service string, plan endpoints.Plan) error {
	api := c.kube.DiscoveryV1().EndpointSlices(c.namespace)
	for _, s := range plan.Create {
		got, err := api.Create(ctx, s, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			if svc, gerr := c.inf.services.Get(service); gerr == nil {
				c.events.warn(svc, ReasonSliceNameTaken, fmt.Sprintf(
					"EndpointSlice %s exists and is not managed by %s; delete it so that the controller can write its own",
					s.Name, kube.EndpointSliceManager))
			}
		}
		if err != nil {
			return fmt.Errorf("create EndpointSlice %s: %w", s.Name, err)
		}
		c.slices.wrote(service, got)
	}
	for _, s := range plan.Update {
		got, err := api.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update EndpointSlice %s: %w", s.Name, err)
		}
		c.slices.wrote(service, got)
	}
	var errs []error
	for _, s := range plan.Delete {
		pre := metav1.Preconditions{UID: &s.UID, ResourceVersion: &s.ResourceVersion}
		err := api.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &pre})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete EndpointSlice %s: %w", s.Name, err))
			continue
		}
		c.slices.deleted(service, s)
	}
	return errors.Join(errs...)
}
