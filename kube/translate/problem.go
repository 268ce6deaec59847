package translate

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kinds of the objects a Problem can name.
const (
	KindGateway       = "Gateway"
	KindL34Route      = "L34Route"
	KindService       = "Service"
	KindEndpointSlice = "EndpointSlice"
	KindGatewayRouter = "GatewayRouter"
)

// Problem is one fault found in an object. An L34Route, GatewayRouter or
// Service with a fault is left out of the State whole; an EndpointSlice
// fault drops the endpoint (or slice) named by Field; a Gateway fault drops
// the annotation entry named by Field. Problems are structured so that callers
// can log them, count them in a metric by Kind and emit them as Kubernetes
// Events on the object.
type Problem struct {
	Kind      string // one of the Kind* constants
	Namespace string
	Name      string
	// Field is the path of the offending field inside the object, e.g.
	// "spec.destinationCIDRs[1]" or "endpoints[0].addresses[0]"; empty when
	// the object as a whole is concerned.
	Field   string
	Message string
}

// String formats the problem as `Kind namespace/name: field: message`.
func (p Problem) String() string {
	obj := p.Kind + " " + p.Namespace + "/" + p.Name
	if p.Field == "" {
		return obj + ": " + p.Message
	}
	return obj + ": " + p.Field + ": " + p.Message
}

// problems collects Problems in the order they are found.
type problems []Problem

func (ps *problems) add(kind string, obj metav1.Object, field, format string, args ...any) {
	*ps = append(*ps, Problem{
		Kind:      kind,
		Namespace: obj.GetNamespace(),
		Name:      obj.GetName(),
		Field:     field,
		Message:   fmt.Sprintf(format, args...),
	})
}
