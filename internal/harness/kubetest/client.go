package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

var crdResource = schema.GroupVersionResource{
	Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions",
}

// Client creates objects of any kind from YAML, like `kubectl create -f`.
type Client struct {
	Dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

// NewClient returns a Client for cfg.
func NewClient(cfg *rest.Config) (*Client, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	return &Client{Dynamic: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// ReadObjects decodes every YAML or JSON document of the files.
func ReadObjects(paths ...string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		objs, err := DecodeObjects(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// DecodeObjects decodes the YAML or JSON documents of data.
func DecodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

// ResourceFor returns the dynamic client of obj's kind, in namespace when
// the kind is namespaced.
func (c *Client) ResourceFor(obj *unstructured.Unstructured, namespace string) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameRoot {
		return c.Dynamic.Resource(m.Resource), nil
	}
	if ns := obj.GetNamespace(); ns != "" {
		namespace = ns
	}
	return c.Dynamic.Resource(m.Resource).Namespace(namespace), nil
}

// Create creates obj (in namespace unless it names one).
func (c *Client) Create(ctx context.Context, namespace string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	r, err := c.ResourceFor(obj, namespace)
	if err != nil {
		return nil, err
	}
	return r.Create(ctx, obj, createOptions)
}

// discoveryTimeout bounds InstallCRDs' wait for discovery to list the CRDs,
// generously: the API server publishes them asynchronously, late on a
// loaded machine.
const discoveryTimeout = 60 * time.Second

// InstallCRDs creates the CustomResourceDefinitions of the files, waits
// until they are established, then until the Client maps every served
// version of their kinds: the API server lists an established CRD in
// discovery a little later, and the Client maps kinds through discovery, so
// without the second wait a Create right after InstallCRDs could fail with
// "no matches for kind". The second wait lasts at most discoveryTimeout (and
// ctx), its error names the kinds still missing.
func (c *Client) InstallCRDs(ctx context.Context, paths ...string) error {
	objs, err := ReadObjects(paths...)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if _, err := c.Dynamic.Resource(crdResource).Create(ctx, o, createOptions); err != nil {
			return fmt.Errorf("create CRD %s: %w", o.GetName(), err)
		}
	}
	for _, o := range objs {
		if err := c.waitEstablished(ctx, o.GetName()); err != nil {
			return err
		}
	}
	return waitMapped(ctx, c.mapper, servedKinds(objs), 100*time.Millisecond, discoveryTimeout)
}

// servedKinds returns the kind of every served version of the CRDs.
func servedKinds(crds []*unstructured.Unstructured) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, o := range crds {
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
		for _, v := range versions {
			m, _ := v.(map[string]any)
			version, _ := m["name"].(string)
			if served, _ := m["served"].(bool); served {
				out = append(out, schema.GroupVersionKind{Group: group, Version: version, Kind: kind})
			}
		}
	}
	return out
}

// waitMapped waits until mapper maps every kind of want, resetting the
// mapper (its cached discovery) before each try, one every interval, for at
// most timeout (and ctx). The error names the kinds still not mapped.
func waitMapped(ctx context.Context, mapper meta.ResettableRESTMapper, want []schema.GroupVersionKind, interval, timeout time.Duration) error {
	missing := want
	var lastErr error
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true,
		func(context.Context) (bool, error) {
			mapper.Reset()
			var still []schema.GroupVersionKind
			for _, gvk := range missing {
				if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
					still = append(still, gvk)
					lastErr = err
				}
			}
			missing = still
			return len(missing) == 0, nil
		})
	if err == nil {
		return nil
	}
	names := make([]string, len(missing))
	for i, gvk := range missing {
		names[i] = gvk.Kind + " " + gvk.GroupVersion().String()
	}
	return fmt.Errorf("CRDs established but still not in the API server's discovery after %v: %s (%w; last mapping error: %v)",
		time.Since(start).Round(time.Millisecond), strings.Join(names, ", "), err, lastErr)
}

func (c *Client) waitEstablished(ctx context.Context, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			crd, err := c.Dynamic.Resource(crdResource).Get(ctx, name, getOptions)
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, cond := range conds {
				m, _ := cond.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
	if err != nil {
		return fmt.Errorf("CRD %s not established: %w", name, err)
	}
	return nil
}

var (
	createOptions = metav1.CreateOptions{}
	getOptions    = metav1.GetOptions{}
)

// InstallAllCRDs installs sllbrd's CRDs (the files of deployDir/crds) and
// the Gateway API CRDs (GatewayAPICRDs), and waits until they are
// established.
func (c *Client) InstallAllCRDs(ctx context.Context, deployDir string) error {
	crds, err := filepath.Glob(filepath.Join(deployDir, "crds", "*.yaml"))
	if err != nil || len(crds) == 0 {
		return fmt.Errorf("no CRDs in %s/crds: %v", deployDir, err)
	}
	gatewayCRDs, err := GatewayAPICRDs()
	if err != nil {
		return err
	}
	return c.InstallCRDs(ctx, append(crds, gatewayCRDs...)...)
}

// CreateFiles creates every object of the files, in namespace unless an
// object names its own, like `kubectl create -f`; the ServiceAccount
// subjects of a ClusterRoleBinding are moved to namespace, as the namespace
// of a kustomization does.
func (c *Client) CreateFiles(ctx context.Context, namespace string, paths ...string) error {
	objs, err := ReadObjects(paths...)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.GetKind() == "ClusterRoleBinding" {
			subjects, _ := o.Object["subjects"].([]any)
			for _, s := range subjects {
				if m, ok := s.(map[string]any); ok && m["kind"] == "ServiceAccount" {
					m["namespace"] = namespace
				}
			}
		}
		if _, err := c.Create(ctx, namespace, o); err != nil {
			return fmt.Errorf("create %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}
