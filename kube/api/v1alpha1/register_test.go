package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestAddToSchemeRegistersKinds(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"L34Route", "L34RouteList", "GatewayRouter", "GatewayRouterList"} {
		if !scheme.Recognizes(SchemeGroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not recognize %s", kind)
		}
	}
	gvks, _, err := scheme.ObjectKinds(&L34Route{})
	if err != nil || len(gvks) != 1 || gvks[0].Group != "meridio.experiment.gateway.api.poc" || gvks[0].Version != "v1alpha1" {
		t.Errorf("ObjectKinds(L34Route) = %v, %v", gvks, err)
	}
}

func TestDeepCopyIsDeep(t *testing.T) {
	route := &L34Route{Spec: L34RouteSpec{
		ParentRefs:       []gatewayv1.ParentReference{{Name: "sllb-a"}},
		DestinationCIDRs: []CIDR{"20.0.0.1/32"},
	}}
	routeCopy := route.DeepCopy()
	routeCopy.Spec.ParentRefs[0].Name = "other"
	routeCopy.Spec.DestinationCIDRs[0] = "20.0.0.2/32"
	if route.Spec.ParentRefs[0].Name != "sllb-a" || route.Spec.DestinationCIDRs[0] != "20.0.0.1/32" {
		t.Errorf("editing the L34Route copy changed the original: %+v", route.Spec)
	}
	router := &GatewayRouter{Spec: GatewayRouterSpec{BGP: &BGPSpec{BFD: &BFDSpec{MinTx: "300ms"}}}}
	routerCopy := router.DeepCopyObject().(*GatewayRouter)
	routerCopy.Spec.BGP.BFD.MinTx = "1s"
	if router.Spec.BGP.BFD.MinTx != "300ms" {
		t.Errorf("editing the GatewayRouter copy changed the original")
	}
}
