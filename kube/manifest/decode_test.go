package manifest

import (
	"strings"
	"testing"
)

const gatewayV1beta1 = `apiVersion: gateway.networking.k8s.io/v1beta1
kind: Gateway
metadata: {name: sllb-a}
spec:
  gatewayClassName: x
  listeners: [{name: all, port: 4000, protocol: TCP}]
`

func TestAddFile(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		wantErr string // substring; "" means success
		check   func(t *testing.T, o *Objects)
	}{{
		name: "v1beta1 Gateway in default namespace",
		data: gatewayV1beta1,
		check: func(t *testing.T, o *Objects) {
			if len(o.Gateways) != 1 || o.Gateways[0].Namespace != "default" || o.Gateways[0].Name != "sllb-a" {
				t.Errorf("gateways = %+v", o.Gateways)
			}
		},
	}, {
		name: "several kinds, empty documents and a List",
		data: "---\n" + strings.Replace(gatewayV1beta1, "v1beta1", "v1", 1) + `---
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata: {name: s, namespace: red}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: c}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: e}
addressType: IPv4
endpoints: []
---
{"apiVersion": "meridio.experiment.gateway.api.poc/v1alpha1", "kind": "L34Route", "metadata": {"name": "r"}, "spec": {"priority": 1}}
---
apiVersion: meridio.experiment.gateway.api.poc/v1alpha1
kind: GatewayRouter
metadata: {name: g}
spec: {address: 10.0.0.1, interface: eth0, static: {}}
`,
		check: func(t *testing.T, o *Objects) {
			if len(o.Gateways) != 1 || len(o.Services) != 1 || len(o.EndpointSlices) != 1 ||
				len(o.Routes) != 1 || len(o.Routers) != 1 {
				t.Errorf("objects = %+v", o)
			}
			if o.Services[0].Namespace != "red" {
				t.Errorf("service namespace = %q, want red", o.Services[0].Namespace)
			}
			if len(o.Ignored) != 1 || !strings.Contains(o.Ignored[0], "ConfigMap") {
				t.Errorf("ignored = %v, want the ConfigMap", o.Ignored)
			}
		},
	}, {
		name:    "malformed YAML names file and document",
		data:    gatewayV1beta1 + "---\nkind: Service\n  bad: [indent\n",
		wantErr: "f.yaml: document 2:",
	}, {
		name:    "unknown field",
		data:    strings.Replace(gatewayV1beta1, "gatewayClassName", "gatewayClass", 1),
		wantErr: `f.yaml: document 1: Gateway: json: unknown field "gatewayClass"`,
	}, {
		name:    "missing kind",
		data:    "apiVersion: v1\nmetadata: {name: x}\n",
		wantErr: "document 1: apiVersion and kind are required",
	}, {
		name:    "missing name",
		data:    "apiVersion: v1\nkind: Service\nmetadata: {namespace: x}\n",
		wantErr: "metadata.name is required",
	}, {
		name:    "defined twice",
		data:    gatewayV1beta1 + "---\n" + strings.Replace(gatewayV1beta1, "name: sllb-a", "name: sllb-a, namespace: default", 1),
		wantErr: "f.yaml: document 2: Gateway default/sllb-a is already defined in f.yaml: document 1",
	}, {
		name:    "wrong type",
		data:    "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {clusterIP: [1]}\n",
		wantErr: "document 1: Service: json: cannot unmarshal",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o Objects
			err := o.AddFile("f.yaml", []byte(tt.data))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("AddFile error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("AddFile: %v", err)
			}
			tt.check(t, &o)
		})
	}
}

func TestSnapshotChoosesGateway(t *testing.T) {
	var o Objects
	data := gatewayV1beta1 + "---\n" + strings.Replace(gatewayV1beta1, "name: sllb-a", "name: sllb-a, namespace: red", 1) +
		"---\n" + strings.Replace(gatewayV1beta1, "name: sllb-a", "name: sllb-b", 1)
	if err := o.AddFile("f.yaml", []byte(data)); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, wantNS, wantErr string }{
		{name: "sllb-b", wantNS: "default"},
		{name: "red/sllb-a", wantNS: "red"},
		{name: "default/sllb-a", wantNS: "default"},
		{name: "sllb-a", wantErr: "ambiguous"},
		{name: "sllb-c", wantErr: "no Gateway"},
		{name: "blue/sllb-b", wantErr: "no Gateway"},
	}
	for _, tt := range tests {
		snap, err := o.Snapshot(tt.name)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Snapshot(%q) error = %v, want %q", tt.name, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("Snapshot(%q): %v", tt.name, err)
		case snap.Gateway.Namespace != tt.wantNS:
			t.Errorf("Snapshot(%q) namespace = %q, want %q", tt.name, snap.Gateway.Namespace, tt.wantNS)
		}
	}
}
