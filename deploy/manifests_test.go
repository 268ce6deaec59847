package deploy

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// yamlFiles returns every YAML file under deploy/.
func yamlFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("walk deploy/: %d files, %v", len(files), err)
	}
	return files
}

// documents splits a file into its YAML documents.
func documents(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := utilyaml.NewYAMLReader(bufioReader(data))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
}

// TestYAMLParses decodes every document under deploy/ strictly enough to
// catch indentation slips: each must be an object with apiVersion and kind
// (a kustomization too) and a name (except kustomizations and components).
func TestYAMLParses(t *testing.T) {
	for _, path := range yamlFiles(t) {
		for i, doc := range documents(t, path) {
			var obj struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				t.Errorf("%s document %d: %v", path, i+1, err)
				continue
			}
			if obj.APIVersion == "" || obj.Kind == "" || (obj.Metadata.Name == "" && obj.Kind != "Kustomization" && obj.Kind != "Component") {
				t.Errorf("%s document %d: apiVersion %q kind %q name %q", path, i+1, obj.APIVersion, obj.Kind, obj.Metadata.Name)
			}
		}
	}
}

// kustomization is the part of kustomization.yaml the tests read.
type kustomization struct {
	APIVersion         string   `json:"apiVersion"`
	Kind               string   `json:"kind"`
	Namespace          string   `json:"namespace"`
	Resources          []string `json:"resources"`
	ConfigMapGenerator []struct {
		Name  string   `json:"name"`
		Files []string `json:"files"`
	} `json:"configMapGenerator"`
	GeneratorOptions struct {
		DisableNameSuffixHash bool `json:"disableNameSuffixHash"`
	} `json:"generatorOptions"`
}

// TestKustomizationListsExistingFiles checks that every resource of
// kustomization.yaml exists, that every CRD, RBAC, controller and
// admission policy file is listed, and that the SLLBR Deployment is not applied but generated into
// the template ConfigMap the controller reads (under a fixed name).
func TestKustomizationListsExistingFiles(t *testing.T) {
	data, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(r); err != nil {
			t.Errorf("kustomization resource %s: %v", r, err)
		}
	}
	for _, dir := range []string{"crds", "rbac", "controller", "admission"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, f := range files {
			if !slices.Contains(k.Resources, filepath.ToSlash(f)) {
				t.Errorf("%s is not listed in kustomization.yaml", f)
			}
		}
	}
	if slices.Contains(k.Resources, "sllbrd/deployment.yaml") {
		t.Errorf("sllbrd/deployment.yaml is applied as a Deployment; the controller creates the SLLBR Deployments from it")
	}
	if len(k.ConfigMapGenerator) != 1 || k.ConfigMapGenerator[0].Name != "sllbrd-templates" ||
		!slices.Equal(k.ConfigMapGenerator[0].Files, []string{"deployment.yaml=sllbrd/deployment.yaml"}) ||
		!k.GeneratorOptions.DisableNameSuffixHash {
		t.Errorf("the template ConfigMap sllbrd-templates (key deployment.yaml, no name suffix) is not generated: %+v", k)
	}
}

// TestRoleGrantsOnlyReads checks the Role: read-only verbs on the watched
// kinds and on the named Secrets only, create/patch on events, nothing else.
func TestRoleGrantsOnlyReads(t *testing.T) {
	var role rbacv1.Role
	if err := yaml.UnmarshalStrict(documents(t, "rbac/role.yaml")[0], &role); err != nil {
		t.Fatal(err)
	}
	read := []string{"get", "list", "watch"}
	checkGrants(t, "Role sllbrd", grants(role.Rules), map[string][]string{
		"gateway.networking.k8s.io/gateways":                read,
		"meridio.experiment.gateway.api.poc/l34routes":      read,
		"meridio.experiment.gateway.api.poc/gatewayrouters": read,
		"/services":                       read,
		"discovery.k8s.io/endpointslices": read,
		"events.k8s.io/events":            {"create", "patch"},
		"/events":                         {"create", "patch"},
		"/secrets":                        read,
	})
	for _, r := range role.Rules {
		if slices.Contains(r.Resources, "secrets") && len(r.ResourceNames) == 0 {
			t.Errorf("the Role grants every Secret of the namespace (%v): name the BGP password Secrets in resourceNames", r)
		}
	}
}

// TestDeploymentContract checks the Deployment against the sllbrd flags and
// the choices of docs/deploy.md.
func TestDeploymentContract(t *testing.T) {
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(documents(t, "sllbrd/deployment.yaml")[0], &d); err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Name != "sllbrd" || c.Image != "" {
		t.Errorf("container %q names the image %q: the controller gives the container named sllbrd its own", c.Name, c.Image)
	}
	for _, arg := range []string{"--gateway=sllb-a", "--metrics-address=:9100", "--drain=10s"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %v lack %s", c.Args, arg)
		}
	}
	if pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds <= 10 {
		t.Errorf("terminationGracePeriodSeconds must exceed the 10s drain")
	}
	if pod.ServiceAccountName != "sllbrd" {
		t.Errorf("serviceAccountName %q", pod.ServiceAccountName)
	}
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Fatalf("capabilities must drop ALL: %+v", sc)
	}
	add := slices.Clone(sc.Capabilities.Add)
	slices.Sort(add)
	if !slices.Equal(add, []corev1.Capability{"NET_ADMIN", "NET_BIND_SERVICE", "NET_RAW"}) {
		t.Errorf("capabilities add %v", add)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || (sc.Privileged != nil && *sc.Privileged) {
		t.Errorf("privilege escalation or privileged allowed")
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" ||
		c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes must read /healthz and /readyz")
	}
	if _, ok := d.Spec.Template.Annotations["k8s.v1.cni.cncf.io/networks"]; !ok {
		t.Errorf("no Multus networks annotation")
	}
	sysctls := map[string]string{}
	for _, s := range pod.SecurityContext.Sysctls {
		sysctls[s.Name] = s.Value
	}
	if sysctls["net.ipv4.ip_forward"] != "1" || sysctls["net.ipv4.conf.all.rp_filter"] != "2" ||
		sysctls["net.ipv4.ip_local_port_range"] != "49152 65535" {
		t.Errorf("sysctls %v", sysctls)
	}
}
