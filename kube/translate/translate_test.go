package translate_test

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

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
