package status

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func managed(manager, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

func TestWritten(t *testing.T) {
	// As kube-apiserver records it: sllbrd wrote both conditions and the
	// addresses, then another controller rewrote Programmed's message and
	// reason (the type key stays co-owned).
	ours := `{"f:status":{".":{},"f:addresses":{},"f:conditions":{".":{},` +
		`"k:{\"type\":\"Accepted\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}},` +
		`"k:{\"type\":\"Programmed\"}":{".":{},"f:type":{}}}}}`
	theirs := `{"f:status":{"f:conditions":{"k:{\"type\":\"Programmed\"}":{"f:message":{},"f:reason":{}}}}}`
	for _, tc := range []struct {
		name      string
		entries   []metav1.ManagedFieldsEntry
		want      []string
		addresses bool
		err       bool
	}{
		{"what the manager owns still", []metav1.ManagedFieldsEntry{managed("sllbrd-controller", "status", ours),
			managed("other", "status", theirs)}, []string{"Accepted"}, true, false},
		{"another manager's", []metav1.ManagedFieldsEntry{managed("other", "status", ours)}, nil, false, false},
		{"the main resource, not the status", []metav1.ManagedFieldsEntry{managed("sllbrd-controller", "", ours)}, nil, false, false},
		{"no entries", nil, nil, false, false},
		{"an entry that does not parse", []metav1.ManagedFieldsEntry{managed("sllbrd-controller", "status", `{"f:status":`)}, nil, false, true},
		{"a key that is not a type", []metav1.ManagedFieldsEntry{managed("sllbrd-controller", "status",
			`{"f:status":{"f:conditions":{"v:x":{"f:message":{}},"k:{\"name\":\"x\"}":{"f:message":{}}}}}`)}, nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{ManagedFields: tc.entries}}
			got, addrs, err := Written(gw, "sllbrd-controller")
			if (err != nil) != tc.err || !slices.Equal(got, tc.want) || addrs != tc.addresses {
				t.Errorf("Written = %v, %v, %v; want %v, %v, error %v", got, addrs, err, tc.want, tc.addresses, tc.err)
			}
		})
	}
}

func TestWithout(t *testing.T) {
	s := gatewayv1.GatewayStatus{
		Addresses:  []gatewayv1.GatewayStatusAddress{{Type: ptr.To(gatewayv1.IPAddressType), Value: "20.0.0.1"}},
		Conditions: []metav1.Condition{{Type: "Accepted"}, {Type: "Programmed"}, {Type: "example.org/Healthy"}},
	}
	got := Without(s, []string{"Accepted", "Programmed"}, true)
	if len(got.Addresses) != 0 || len(got.Conditions) != 1 || got.Conditions[0].Type != "example.org/Healthy" {
		t.Errorf("Without = %+v", got)
	}
	if len(s.Conditions) != 3 || len(s.Addresses) != 1 {
		t.Errorf("Without changed its input: %+v", s)
	}
	if got := Without(s, nil, false); len(got.Conditions) != 3 || len(got.Addresses) != 1 {
		t.Errorf("Without nothing = %+v", got)
	}
}
