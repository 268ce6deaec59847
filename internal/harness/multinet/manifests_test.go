package multinet

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

func TestCRD(t *testing.T) {
	var crd struct {
		APIVersion, Kind string
		Metadata         struct{ Name string }
		Spec             struct {
			Group, Scope string
			Names        struct {
				Kind, Plural, Singular string
				ShortNames             []string
			}
			Versions []struct {
				Name            string
				Served, Storage bool
				Schema          struct {
					OpenAPIV3Schema struct {
						Properties struct {
							Spec struct {
								Type       string
								Properties map[string]struct{ Type string }
							}
						}
					} `json:"openAPIV3Schema"`
				}
			}
		}
	}
	if err := yaml.Unmarshal(CRDYAML(), &crd); err != nil {
		t.Fatal(err)
	}
	s := crd.Spec
	if crd.APIVersion != "apiextensions.k8s.io/v1" || crd.Kind != "CustomResourceDefinition" ||
		crd.Metadata.Name != NADResource+"."+NADGroup || s.Group != NADGroup || s.Scope != "Namespaced" ||
		s.Names.Kind != NADKind || s.Names.Plural != NADResource || !reflect.DeepEqual(s.Names.ShortNames, []string{"net-attach-def"}) {
		t.Errorf("CRD %+v", crd)
	}
	if len(s.Versions) != 1 || s.Versions[0].Name != NADVersion || !s.Versions[0].Served || !s.Versions[0].Storage {
		t.Fatalf("CRD versions %+v", s.Versions)
	}
	spec := s.Versions[0].Schema.OpenAPIV3Schema.Properties.Spec
	if spec.Type != "object" || spec.Properties["config"].Type != "string" {
		t.Errorf("CRD spec schema %+v: want spec.config a string", spec)
	}
}

// TestClusterRole pins the role to the least multinet needs.
func TestClusterRole(t *testing.T) {
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(ClusterRoleYAML(), &role); err != nil {
		t.Fatal(err)
	}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{NADGroup}, Resources: []string{NADResource}, Verbs: []string{"get"}},
	}
	if role.Kind != "ClusterRole" || role.Name != ClusterRoleName || !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("ClusterRole %+v, want rules %+v", role, want)
	}
}
