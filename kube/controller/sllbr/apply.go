package sllbr

import (
	"encoding/json"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
)

// Apply returns the rendered Deployment d as the configuration the
// controller applies with server-side apply: every field Render set,
// nothing of status. Fields the configuration leaves out are not the
// controller's: other tools' annotations, labels and fields stay.
func Apply(d *appsv1.Deployment) (*appsv1ac.DeploymentApplyConfiguration, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("marshal Deployment %s: %w", d.Name, err)
	}
	ac := &appsv1ac.DeploymentApplyConfiguration{}
	if err := json.Unmarshal(b, ac); err != nil {
		return nil, fmt.Errorf("Deployment %s as an apply configuration: %w", d.Name, err)
	}
	ac.Status = nil
	return ac.WithAPIVersion("apps/v1").WithKind("Deployment"), nil
}

// Drifted reports whether live differs from the rendered Deployment want
// in what the controller owns: the hash of what was rendered changed (the
// template, the parameters or the Gateway), or a field of want is not
// owned by manager with want's value any more (someone changed it: the
// API server gave the field to them). Fields the controller does not set
// are never drift.
func Drifted(live, want *appsv1.Deployment, manager string) (bool, error) {
	if live.Annotations[AnnotationHash] != want.Annotations[AnnotationHash] {
		return true, nil
	}
	owned, err := appsv1ac.ExtractDeployment(live, manager)
	if err != nil {
		return false, fmt.Errorf("the fields of Deployment %s owned by %s: %w", live.Name, manager, err)
	}
	desired, err := Apply(want)
	if err != nil {
		return false, err
	}
	have, err := generic(owned)
	if err != nil {
		return false, err
	}
	wanted, err := generic(desired)
	if err != nil {
		return false, err
	}
	return !covers(have, wanted), nil
}

// generic returns v as JSON decodes into any.
func generic(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}

// covers reports whether have holds everything want holds, with the same
// values: maps key by key (an empty map or list, or null, in want
// asks for nothing), lists item by item in order with as many items (a list item
// of want may lack fields the API server filled in, such as a port's
// protocol in its key).
func covers(have, want any) bool {
	switch w := want.(type) {
	case nil:
		return true
	case map[string]any:
		if len(w) == 0 {
			return true
		}
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !covers(h[k], v) {
				return false
			}
		}
		return true
	case []any:
		if len(w) == 0 {
			return true
		}
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !covers(h[i], w[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(have, want)
}
