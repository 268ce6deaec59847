package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// Resource names of the custom resources, as in their API paths.
const (
	ResourceL34Routes      = "l34routes"
	ResourceGatewayRouters = "gatewayrouters"
)

// NewRESTClient returns a REST client for the custom resources of this
// group and version (no typed clientset is generated for them): list and
// watch them with cache.NewFilteredListWatchFromClient, write their status
// with Put().SubResource("status").
func NewRESTClient(cfg *rest.Config) (rest.Interface, error) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("scheme: %w", err)
	}
	c := rest.CopyConfig(cfg)
	gv := SchemeGroupVersion
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	c.ContentType = runtime.ContentTypeJSON
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientFor(c)
}
