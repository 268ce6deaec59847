package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
)

// kustomizeBuild writes a kustomization that installs deploy/ in namespace
// ns with the image newImage and the components (directories of deploy/),
// as a user's overlay does, builds it with `kubectl kustomize` and returns
// its objects.
func kustomizeBuild(t *testing.T, kubectl, ns, newImage string, components ...string) []*unstructured.Unstructured {
	t.Helper()
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel := func(p string) string { // kustomize refuses absolute paths
		r, err := filepath.Rel(dir, filepath.Join(here, p))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	name, tag, _ := strings.Cut(newImage, ":")
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + ns + "\nresources:\n- " + rel(".") + "\n"
	if len(components) > 0 {
		k += "components:\n"
		for _, c := range components {
			k += "- " + rel(c) + "\n"
		}
	}
	k += "images:\n- name: ghcr.io/sllbrd/sllbrd\n  newName: " + name + "\n  newTag: " + tag + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubectl, "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize of\n%s: %v", k, exitMessage(err))
	}
	objs, err := kubetest.DecodeObjects(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func exitMessage(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return err.Error() + ": " + string(ee.Stderr)
	}
	return err.Error()
}

// typed converts a built object to its type.
func typed[T any](t *testing.T, o *unstructured.Unstructured) T {
	t.Helper()
	var out T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &out); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return out
}

// TestIntegrationTargetNodeBuild builds deploy/ with and without
// deploy/target-node, and with its cleanup, as users do (docs/deploy.md,
// "The node daemon"): the component adds exactly its six objects, all
// labelled for the uninstall, in the kustomization's namespace (its
// ClusterRoleBinding's subject too) and with its image; cleanup adds
// --cleanup to the daemon's arguments and changes nothing else. kubectl is
// the one hack/kube-assets.sh builds (kustomize v5).
func TestIntegrationTargetNodeBuild(t *testing.T) {
	kubectl := filepath.Join(kubetest.RequireNodeAssets(t), "kubectl")
	const ns, image = "sllbrd-system", "registry.example.org/sllbrd:v9.9.9"
	base := kustomizeBuild(t, kubectl, ns, image)
	node := kustomizeBuild(t, kubectl, ns, image, targetNodeDir)
	cleanup := kustomizeBuild(t, kubectl, ns, image, targetNodeDir, filepath.Join(targetNodeDir, "cleanup"))

	ours := func(o *unstructured.Unstructured) bool { return o.GetLabels()[targetNodeLabel] == targetNodeName }
	if slices.ContainsFunc(base, ours) {
		t.Errorf("deploy/ alone installs the node daemon")
	}
	var added []string
	for _, o := range node {
		if ours(o) {
			added = append(added, o.GetKind()+"/"+o.GetName())
		}
	}
	slices.Sort(added)
	want := []string{"ClusterRole/sllbrd-target-node", "ClusterRoleBinding/sllbrd-target-node", "DaemonSet/sllbrd-target-node",
		"ServiceAccount/sllbrd-target-node", "ValidatingAdmissionPolicy/sllbrd-target-own-node", "ValidatingAdmissionPolicyBinding/sllbrd-target-own-node"}
	if !slices.Equal(added, want) || len(node) != len(base)+len(want) {
		t.Errorf("the component adds %v (%d objects to %d), want %v", added, len(node), len(base), want)
	}
	file := targetNodeDaemonSet(t).Spec.Template.Spec.Containers[0]
	for name, objs := range map[string][]*unstructured.Unstructured{"with the node daemon": node, "with its cleanup": cleanup} {
		wantArgs := file.Args
		if name == "with its cleanup" {
			wantArgs = append(slices.Clone(file.Args), "--cleanup")
		}
		checkBuiltTargetNode(t, name, objs, ns, image, wantArgs)
	}
}

// checkBuiltTargetNode checks the daemon's objects in a build.
func checkBuiltTargetNode(t *testing.T, name string, objs []*unstructured.Unstructured, ns, image string, args []string) {
	t.Helper()
	for _, o := range objs {
		switch {
		case o.GetKind() == "DaemonSet" && o.GetName() == targetNodeName:
			ds := typed[appsv1.DaemonSet](t, o)
			c := ds.Spec.Template.Spec.Containers[0]
			if ds.Namespace != ns || c.Image != image || !slices.Equal(c.Args, args) {
				t.Errorf("%s: DaemonSet in %q, image %q, args %v: want %q, %q, %v", name, ds.Namespace, c.Image, c.Args, ns, image, args)
			}
		case o.GetKind() == "ServiceAccount" && o.GetName() == targetNodeName && o.GetNamespace() != ns:
			t.Errorf("%s: ServiceAccount in %q, want %q", name, o.GetNamespace(), ns)
		case o.GetKind() == "ClusterRoleBinding" && o.GetName() == targetNodeName:
			b := typed[rbacv1.ClusterRoleBinding](t, o)
			if len(b.Subjects) != 1 || b.Subjects[0].Namespace != ns {
				t.Errorf("%s: ClusterRoleBinding subjects %+v: want the ServiceAccount of %s", name, b.Subjects, ns)
			}
		case o.GetKind() == "Deployment" && o.GetName() == "sllbrd-controller":
			if c := typed[appsv1.Deployment](t, o).Spec.Template.Spec.Containers[0]; c.Image != image {
				t.Errorf("%s: the controller's image %q, want %q", name, c.Image, image)
			}
		}
	}
}
