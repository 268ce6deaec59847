package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

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

// ourSlices returns the cached slices the controller wrote for the
// Service service with UID uid (any UID when empty: the Service is gone);
// see endpoints.Managed.
func (c *Controller) ourSlices(service string, uid types.UID) []*discoveryv1.EndpointSlice {
	ss, _ := c.inf.slices.List(labels.SelectorFromSet(labels.Set{kube.LabelServiceName: service}))
	return slices.DeleteFunc(ss, func(s *discoveryv1.EndpointSlice) bool { return !endpoints.Managed(s, service, uid) })
}

// reconcileService writes the EndpointSlices of a Service of an owned
// Gateway, and deletes the controller's slices of any other Service.
func (c *Controller) reconcileService(ctx context.Context, name string) error {
	svc, err := c.inf.services.Get(name)
	if apierrors.IsNotFound(err) {
		existing := c.ourSlices(name, "")
		if c.slices.stale(name, existing) {
			return errStale
		}
		c.forgetService(name)
		return c.writeSlices(ctx, name, endpoints.Plan{Delete: existing})
	}
	if err != nil {
		return err
	}
	existing := c.ourSlices(name, svc.UID)
	if c.slices.stale(name, existing) {
		return errStale
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
	// The SLLBRs leave out a Service with an invalid liveness annotation,
	// and the routes to it (which say so in their status); its slices do
	// not depend on it and are written as usual.
	if _, err := translate.Liveness(svc); err != nil {
		c.events.warn(svc, ReasonInvalidService, "annotation "+kube.AnnotationEndpointLiveness+": "+err.Error()+
			"; the SLLBRs leave the Service and the L34Routes to it out")
	} else {
		c.events.resolved(svc, ReasonInvalidService)
	}
	if err := c.checkPodCache(ctx, existing); err != nil {
		return err
	}
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
// pods without a usable address (once per reason), pods whose address
// another endpoint has, pods past the limit, and pods listed never ready
// for a fault of theirs (an unknown target agent).
func (c *Controller) reportPods(svc *corev1.Service, maxEndpoints int, cands []endpoints.Candidate,
	skipped []endpoints.Skipped, assigned identifiers.Assignment) {
	byFault := map[string]int{}
	for _, f := range endpoints.Faults {
		byFault[string(f)] = 0
	}
	duplicate := map[string]bool{}
	for _, d := range assigned.Duplicates {
		duplicate[d.Pod.UID] = true
		skipped = append(skipped, endpoints.Skipped{Pod: podByUID(cands, d.Pod.UID), Fault: endpoints.FaultDuplicateAddress,
			Message: fmt.Sprintf("its address %s is the endpoint address of pod %s, which comes first: %s (an address is listed for one pod only)",
				d.Address, d.Holder.Name, d.Why)})
	}
	for _, s := range skipped {
		byFault[string(s.Fault)]++
		c.events.warn(s.Pod, string(s.Fault), fmt.Sprintf("not an endpoint of Service %s: %s", svc.Name, s.Message))
	}
	for _, cand := range cands {
		for _, f := range endpoints.Faults {
			if f != endpoints.FaultDuplicateAddress || !duplicate[string(cand.Pod.UID)] {
				c.events.resolved(cand.Pod, string(f))
			}
		}
		if _, ok := assigned.IDs[string(cand.Pod.UID)]; ok {
			c.events.resolved(cand.Pod, ReasonEndpointsOverLimit)
		}
		c.reportListedFault(cand)
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

// reportListedFault warns on a candidate's pod when its endpoints stay not
// ready until someone fixes it (Candidate.Fault), and notes the other
// faults of that kind resolved. The note names no Service: the fault is
// the pod's, the same for every Service that selects it.
func (c *Controller) reportListedFault(cand endpoints.Candidate) {
	for _, f := range endpoints.ListedFaults {
		if f == cand.Fault {
			c.events.warn(cand.Pod, string(f), "its endpoints are listed not ready: "+cand.Unapplied)
		} else {
			c.events.resolved(cand.Pod, string(f))
		}
	}
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
		got, err := api.Create(ctx, s, metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsAlreadyExists(err) {
			return c.sliceNameTaken(ctx, service, s.Name)
		}
		if err != nil {
			return fmt.Errorf("create EndpointSlice %s: %w", s.Name, err)
		}
		c.slices.wrote(service, got)
	}
	for _, s := range plan.Update {
		got, err := api.Update(ctx, s, metav1.UpdateOptions{FieldManager: FieldManager})
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

// checkPodCache returns errStale when the pod cache is older than the
// Service's slices (endpoints.PodsBehind): a pod the slices list, missing
// from the cache, is looked up on the API server, and the cache is behind
// when it exists there. A new leader whose pod watch lags would otherwise
// drop endpoints the old leader listed, and hand out their identifiers
// anew when the pods reach its cache.
func (c *Controller) checkPodCache(ctx context.Context, existing []*discoveryv1.EndpointSlice) error {
	unknown, behind := endpoints.PodsBehind(existing, func(name string) *corev1.Pod {
		p, err := c.inf.pods.Get(name)
		if err != nil {
			return nil
		}
		return p
	})
	if behind {
		return fmt.Errorf("pod cache: a pod the slices list as terminating is cached not being deleted: %w", errStale)
	}
	for _, ref := range unknown {
		p, err := c.kube.CoreV1().Pods(c.namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("get Pod %s, listed in the slices and not cached: %w", ref.Name, err)
		case p.UID == ref.UID:
			return fmt.Errorf("pod cache: Pod %s, listed in the slices, exists and is not cached yet: %w", ref.Name, errStale)
		}
	}
	return nil
}

// sliceNameTaken handles a slice that could not be created because its
// name exists: the controller's own slice that the cache does not show yet
// (a new leader whose cache is behind) is waited for; someone else's gets
// an EndpointSliceNameTaken Event on the Service saying so.
func (c *Controller) sliceNameTaken(ctx context.Context, service, name string) error {
	svc, err := c.inf.services.Get(service)
	if err != nil {
		return fmt.Errorf("create EndpointSlice %s: the name exists, and Service %s: %w", name, service, err)
	}
	list, err := c.kube.DiscoveryV1().EndpointSlices(c.namespace).List(ctx,
		metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return fmt.Errorf("create EndpointSlice %s: the name exists, and reading it failed: %w", name, err)
	}
	if len(list.Items) == 0 {
		return fmt.Errorf("create EndpointSlice %s: the name existed and is free now: %w", name, errStale)
	}
	s := &list.Items[0]
	if endpoints.Managed(s, service, svc.UID) {
		return fmt.Errorf("EndpointSlice %s is the controller's and not cached yet: %w", name, errStale)
	}
	why := fmt.Sprintf("its label %s is %q", kube.LabelEndpointSliceManagedBy, s.Labels[kube.LabelEndpointSliceManagedBy])
	advice := "delete it so that the controller can write its own"
	if s.Labels[kube.LabelEndpointSliceManagedBy] == kube.EndpointSliceManager {
		why = "it is not controlled by this Service (UID " + string(svc.UID) + ")"
		if endpoints.Managed(s, service, "") {
			why, advice = "it belongs to an earlier Service of that name", "the garbage collector deletes it, then the controller writes its own"
		}
	}
	c.events.warn(svc, ReasonSliceNameTaken, fmt.Sprintf("EndpointSlice %s exists and is not this Service's slice of %s (%s); %s",
		name, kube.EndpointSliceManager, why, advice))
	return fmt.Errorf("create EndpointSlice %s: the name is taken (%s)", name, why)
}
