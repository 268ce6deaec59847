package translate_test

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/api/v1alpha1"

	"github.com/sllbrd/sllbrd/kube/translate"
	"github.com/sllbrd/sllbrd/model"
)

func TestTranslateWithoutGateway(t *testing.T) {
	state, problems, err := translate.Translate(translate.Snapshot{})
	if !errors.Is(err, translate.ErrNoGateway) || state != nil || problems != nil {
		t.Fatalf("Translate(empty) = %v, %v, %v; want nil, nil, ErrNoGateway", state, problems, err)
	}
}

// TestTranslateKeepsGoodObjects pins, independently of the golden files,
// the behaviours callers rely on.
func TestTranslateKeepsGoodObjects(t *testing.T) {
	tests := []struct {
		file  string
		check func(t *testing.T, s *model.State, problems []translate.Problem)
	}{{
		file: "testdata/routes.yaml",
		check: func(t *testing.T, s *model.State, problems []translate.Problem) {
			want := []string{"default/good-high", "default/good-same-priority", "default/good-low"}
			if got := routeNames(s); !slices.Equal(got, want) {
				t.Errorf("routes = %v, want %v (priority order, bad ones skipped)", got, want)
			}
			assertProblem(t, problems, translate.Problem{Kind: "L34Route", Namespace: "default",
				Name: "bad-everything", Field: "spec.destinationCIDRs[0]"})
			assertNoProblemAbout(t, problems, "other-gateway", "other-namespace", "other-parent-kind")
		},
	}, {
		file: "testdata/endpoints.yaml",
		check: func(t *testing.T, s *model.State, problems []translate.Problem) {
			want := []model.Endpoint{
				{ID: 0, Addr: netip.MustParseAddr("169.111.100.1"), Ready: true}, // ready unset
				{ID: 1, Addr: netip.MustParseAddr("169.111.100.2"), Ready: true}, // merged copies
				{ID: 6, Addr: netip.MustParseAddr("169.111.100.10"), Ready: true},
				{ID: 7, Addr: netip.MustParseAddr("fd00::2"), Ready: true},
			}
			if len(s.Services) != 1 || !slices.Equal(s.Services[0].Endpoints, want) {
				t.Fatalf("services = %+v, want one with endpoints %v", s.Services, want)
			}
			assertProblem(t, problems, translate.Problem{Kind: "EndpointSlice", Namespace: "red",
				Name: "service-a-1", Field: "endpoints[3].addresses[0]"}) // duplicate identifier
			assertNoProblemAbout(t, problems, "service-a-elsewhere", "service-b-1")
		},
	}, {
		file: "testdata/routers.yaml",
		check: func(t *testing.T, s *model.State, problems []translate.Problem) {
			want := []string{"default/bgp-bfd-defaults-v6", "default/bgp-defaults", "default/bgp-multihop", "default/static-bfd", "default/static-no-bfd"}
			var got []string
			for _, r := range s.Routers {
				got = append(got, r.Name)
			}
			if !slices.Equal(got, want) {
				t.Errorf("routers = %v, want %v", got, want)
			}
			if b := s.Routers[1].BGP; b == nil || b.HoldTime.Seconds() != 90 || b.LocalPort != 179 || b.RemotePort != 179 {
				t.Errorf("bgp-defaults BGP = %+v, want hold time 90s and ports 179", b)
			}
			if s.Routers[4].BGP != nil || s.Routers[4].BFD.Enabled {
				t.Errorf("static-no-bfd = %+v, want no BGP and BFD off", s.Routers[4])
			}
			if b := s.Routers[2].BFD; !b.Multihop || b.LocalAddress != netip.MustParseAddr("169.254.100.1") {
				t.Errorf("bgp-multihop BFD = %+v, want multihop from 169.254.100.1", b)
			}
			for name, field := range map[string]string{"bad-multihop-static": "spec.static.bfd.multihop",
				"bad-multihop-link-local": "spec.bgp.bfd.multihop", "bad-local-family": "spec.static.bfd.localAddress",
				"bad-local-address": "spec.static.bfd.localAddress", "bgp-same-address": "spec.address"} {
				assertProblem(t, problems, translate.Problem{Kind: "GatewayRouter", Namespace: "default", Name: name, Field: field})
			}
			assertNoProblemAbout(t, problems, "unlabelled", "other-gateway")
		},
	}, {
		file:  "testdata/router-bgp.yaml",
		check: checkRouterBGP,
	}, {
		file:  "testdata/liveness.yaml",
		check: checkLiveness,
	}}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r := translateFile(t, tt.file)
			tt.check(t, r.State, r.Problems)
		})
	}
}

func routeNames(s *model.State) []string {
	var out []string
	for _, r := range s.Routes {
		out = append(out, r.Name)
	}
	return out
}

// assertProblem fails unless a problem has want's kind, object and field.
func assertProblem(t *testing.T, problems []translate.Problem, want translate.Problem) {
	t.Helper()
	for _, p := range problems {
		if p.Kind == want.Kind && p.Namespace == want.Namespace && p.Name == want.Name && p.Field == want.Field {
			if p.Message == "" {
				t.Errorf("problem %v has no message", p)
			}
			return
		}
	}
	t.Errorf("no problem %s %s/%s %s in %v", want.Kind, want.Namespace, want.Name, want.Field, problems)
}

func assertNoProblemAbout(t *testing.T, problems []translate.Problem, names ...string) {
	t.Helper()
	for _, p := range problems {
		if slices.Contains(names, p.Name) {
			t.Errorf("unexpected problem about an object of another scope: %v", p)
		}
	}
}

// checkRouterBGP pins what the golden file shows only redacted: which
// password each router got (the Secret of the Gateway's namespace, key
// "password" by default, stringData as well as data), and that no problem
// quotes a password.
func checkRouterBGP(t *testing.T, s *model.State, problems []translate.Problem) {
	want := map[string]string{"default/ebgp-protected": "secret-one", "default/ebgp-two-hops": "secret-two",
		"default/ibgp-preferred": ""}
	if len(s.Routers) != len(want) {
		t.Errorf("routers = %v, want %d", s.Routers, len(want))
	}
	for _, r := range s.Routers {
		if w, ok := want[r.Name]; !ok || r.BGP.Password.Reveal() != w {
			t.Errorf("%s: password %q, want %q", r.Name, r.BGP.Password.Reveal(), w)
		}
	}
	if lp := s.Routers[2].BGP.LocalPreference; lp == nil || *lp != 200 {
		t.Errorf("ibgp-preferred local preference = %v, want 200", lp)
	}
	for name, field := range map[string]string{"bad-secret-missing": "spec.bgp.passwordSecretRef",
		"bad-secret-key": "spec.bgp.passwordSecretRef", "bad-password-empty": "spec.bgp.passwordSecretRef",
		"bad-password-too-long": "spec.bgp.passwordSecretRef", "bad-password-link-local": "spec.bgp.passwordSecretRef",
		"bad-ttl-security-ibgp": "spec.bgp.ttlSecurity", "bad-ttl-security-hops": "spec.bgp.ttlSecurity.hops",
		"bad-communities": "spec.bgp.communities[0]", "bad-local-preference-ebgp": "spec.bgp.localPreference",
		"bad-local-preference-zero": "spec.bgp.localPreference"} {
		assertProblem(t, problems, translate.Problem{Kind: "GatewayRouter", Namespace: "default", Name: name, Field: field})
	}
	for _, p := range problems {
		for _, secret := range []string{"secret-one", "secret-two", "not-this-one", "xxxxxxxx"} {
			if strings.Contains(p.String(), secret) {
				t.Errorf("problem %q quotes a password", p)
			}
		}
	}
}

// TestPasswordLength: 80 bytes (the kernel's TCP_MD5SIG_MAXKEYLEN) are
// accepted, 81 are not.
func TestPasswordLength(t *testing.T) {
	for _, n := range []int{1, 80, 81} {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "auth", Namespace: "default"},
			Data: map[string][]byte{"password": []byte(strings.Repeat("k", n))}}
		router := &v1alpha1.GatewayRouter{
			ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "default", Labels: map[string]string{kube.LabelServiceProxyName: "sllb-a"}},
			Spec: v1alpha1.GatewayRouterSpec{Address: "192.0.2.1", Interface: "eth1", BGP: &v1alpha1.BGPSpec{
				LocalASN: 1, RemoteASN: 2, PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "auth"}}},
		}
		gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "sllb-a", Namespace: "default"}}
		s, problems, err := translate.Translate(translate.Snapshot{Gateway: gw, Routers: []*v1alpha1.GatewayRouter{router}, Secrets: []*corev1.Secret{secret}})
		if err != nil {
			t.Fatal(err)
		}
		accepted := len(s.Routers) == 1 && s.Routers[0].BGP.Password.Len() == n
		if accepted != (n <= 80) {
			t.Errorf("a %d-byte password: accepted %v, problems %v", n, accepted, problems)
		}
	}
}
