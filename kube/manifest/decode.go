package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
)

// Objects holds decoded objects of every kind sllbrd reads.
type Objects struct {
	Gateways       []*gatewayv1.Gateway
	Routes         []*v1alpha1.L34Route
	Services       []*corev1.Service
	EndpointSlices []*discoveryv1.EndpointSlice
	Routers        []*v1alpha1.GatewayRouter
	// Secrets are v1 Secrets (the GatewayRouters' BGP passwords, in data
	// or stringData). Nothing logs their content.
	Secrets []*corev1.Secret
	// Ignored lists the documents of kinds sllbrd does not read, as
	// "file: document N: apiVersion kind namespace/name".
	Ignored []string

	defined map[string]string // "kind namespace/name" -> where defined
}

// header is the part of every document that selects its type.
type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// AddFile decodes every document of one file's content into o. On error o
// may hold some of the file's objects; callers discard it.
func (o *Objects) AddFile(file string, data []byte) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for n := 1; ; n++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", file, n, err)
		}
		where := fmt.Sprintf("%s: document %d", file, n)
		if err := o.addDocument(where, doc); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
}

func (o *Objects) addDocument(where string, doc []byte) error {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil // empty document, e.g. after a trailing "---"
	}
	var h header
	if err := json.Unmarshal(js, &h); err != nil {
		return fmt.Errorf("not an object: %w", err)
	}
	if h.APIVersion == "" || h.Kind == "" {
		return errors.New("apiVersion and kind are required")
	}
	if h.APIVersion == "v1" && h.Kind == "List" {
		return o.addList(where, js)
	}
	return o.addObject(where, h, js)
}

func (o *Objects) addList(where string, js []byte) error {
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(js, &list); err != nil {
		return fmt.Errorf("v1 List: %w", err)
	}
	for i, item := range list.Items {
		itemWhere := fmt.Sprintf("%s item %d", where, i+1)
		if err := o.addDocument(itemWhere, item); err != nil {
			return fmt.Errorf("item %d: %w", i+1, err)
		}
	}
	return nil
}

func (o *Objects) addObject(where string, h header, js []byte) error {
	switch gv, kind := h.APIVersion, h.Kind; {
	case kind == "Gateway" && gv == gatewayv1.GroupVersion.String():
		return add(o, where, kind, js, &o.Gateways)
	case kind == "Gateway" && gv == gatewayv1beta1.GroupVersion.String():
		var beta []*gatewayv1beta1.Gateway
		if err := add(o, where, kind, js, &beta); err != nil {
			return err
		}
		o.Gateways = append(o.Gateways, (*gatewayv1.Gateway)(beta[0]))
		return nil
	case kind == "Service" && gv == "v1":
		return add(o, where, kind, js, &o.Services)
	case kind == "EndpointSlice" && gv == discoveryv1.SchemeGroupVersion.String():
		return add(o, where, kind, js, &o.EndpointSlices)
	case kind == "L34Route" && gv == v1alpha1.SchemeGroupVersion.String():
		return add(o, where, kind, js, &o.Routes)
	case kind == "GatewayRouter" && gv == v1alpha1.SchemeGroupVersion.String():
		return add(o, where, kind, js, &o.Routers)
	case kind == "Secret" && gv == "v1":
		return add(o, where, kind, js, &o.Secrets)
	}
	o.Ignored = append(o.Ignored, fmt.Sprintf("%s: %s %s %s/%s",
		where, h.APIVersion, h.Kind, h.Metadata.Namespace, h.Metadata.Name))
	return nil
}

// add decodes js strictly into a new T, defaults its namespace, refuses a
// second definition of the same object and appends it to list.
func add[T any, PT interface {
	*T
	metav1.Object
}](o *Objects, where, kind string, js []byte, list *[]PT) error {
	obj := PT(new(T))
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	if obj.GetName() == "" {
		return fmt.Errorf("%s: metadata.name is required", kind)
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(kube.DefaultNamespace)
	}
	key := kind + " " + obj.GetNamespace() + "/" + obj.GetName()
	if prev, ok := o.defined[key]; ok {
		return fmt.Errorf("%s is already defined in %s", key, prev)
	}
	if o.defined == nil {
		o.defined = make(map[string]string)
	}
	o.defined[key] = where
	*list = append(*list, obj)
	return nil
}
