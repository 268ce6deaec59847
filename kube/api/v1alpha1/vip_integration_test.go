package v1alpha1_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"
	"github.com/sllbrd/sllbrd/model/vip"
)

const l34RouteCRD = "../../../deploy/crds/meridio.experiment.gateway.api.poc_l34routes.yaml"

// TestIntegrationCRDRefusesWhatIsNoVIP holds the L34Route CRD's CEL rules
// to model/vip, the rule the translator, the controller and the target
// apply: at both ends of every vip.Reserved range and just outside them,
// the API server refuses a destination exactly when vip.Check does, and
// its message names the field and the kind of address.
func TestIntegrationCRDRefusesWhatIsNoVIP(t *testing.T) {
	require.Integration(t)
	cp := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	client, err := kubetest.NewClient(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "sllbrd-vip"
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if _, err := kubernetes.NewForConfigOrDie(cp.AdminConfig()).CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.InstallCRDs(ctx, l34RouteCRD); err != nil {
		t.Fatal(err)
	}
	routes := client.Dynamic.Resource(v1alpha1.SchemeGroupVersion.WithResource(v1alpha1.ResourceL34Routes)).Namespace(ns)
	// create asks the API server to create a route with the destinations,
	// as a dry run: validation runs, nothing is stored.
	create := func(dests ...string) error {
		r := map[string]any{
			"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "L34Route",
			"metadata": map[string]any{"name": "vip"},
			"spec": map[string]any{
				"parentRefs":       []any{map[string]any{"name": "sllb-a"}},
				"backendRefs":      []any{map[string]any{"name": "service-a", "port": int64(1)}},
				"priority":         int64(1),
				"protocols":        []any{"TCP"},
				"destinationCIDRs": toAny(dests),
			},
		}
		_, err := routes.Create(ctx, &unstructured.Unstructured{Object: r}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}

	if err := create("20.0.0.1/32", "2001:db8::1/128", "10.0.0.1/32", "fd00::1/128"); err != nil {
		t.Fatalf("valid VIPs refused: %v", err)
	}
	checked := 0
	for _, r := range vip.Reserved {
		first, last := r.Prefix.Addr(), r.Last()
		for _, a := range []netip.Addr{first, last, first.Prev(), last.Next()} {
			if !a.IsValid() {
				continue
			}
			p := netip.PrefixFrom(a, a.BitLen())
			// The address second, so that the message must name its index.
			err := create("20.0.0.1/32", p.String())
			goErr := vip.Check(p)
			t.Logf("%s: API server: %v; vip.Check: %v", p, err, goErr)
			switch {
			case (err == nil) != (goErr == nil):
				t.Errorf("%s: the API server says %v, vip.Check says %v", p, err, goErr)
			case goErr != nil:
				kind := kindOf(p)
				for _, want := range []string{"spec.destinationCIDRs[1]", p.String() + " is " + article(kind), "a VIP must be a unicast address"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%s: message %q does not say %q", p, err, want)
					}
				}
				if !strings.Contains(goErr.Error(), kind) {
					t.Errorf("%s: vip.Check %q does not say %q", p, goErr, kind)
				}
			}
			checked++
		}
	}
	if checked < 3*len(vip.Reserved) {
		t.Errorf("checked %d addresses", checked)
	}
	// What is no CIDR or no host prefix is refused by the other rules, as
	// by vip.Check.
	for dest, want := range map[string]string{
		"::ffff:20.0.0.1/128": "must be a CIDR",
		"20.0.0.0/24":         "destination CIDRs must be IPv4 /32 or IPv6 /128",
		"2001:db8::/64":       "destination CIDRs must be IPv4 /32 or IPv6 /128",
	} {
		err := create(dest)
		if err == nil || !strings.Contains(err.Error(), "spec.destinationCIDRs[0]") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: API server says %v, want %q", dest, err, want)
		}
		if _, goErr := vip.Parse(dest); goErr == nil {
			t.Errorf("%s: vip.Parse accepts it", dest)
		}
	}
}

// kindOf is the kind of the reserved range holding p.
func kindOf(p netip.Prefix) string {
	for _, r := range vip.Reserved {
		if r.Prefix.Contains(p.Addr()) {
			return r.Kind
		}
	}
	return ""
}

// article is the CRD message's "a loopback address", "an unspecified
// address", ...
func article(kind string) string {
	if kind == vip.KindUnspecified {
		return "an unspecified address"
	}
	return "a " + kind + " address"
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
