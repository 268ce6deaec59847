package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// controllerGen is the generator named in kube/api/v1alpha1/doc.go.
const controllerGen = "sigs.k8s.io/controller-tools/cmd/controller-gen@v0.20.1"

// TestCRDsAreNotStale regenerates the CRDs and the deepcopy code from
// kube/api/v1alpha1 into temporary directories and compares them with
// deploy/crds and kube/api/v1alpha1/zz_generated.deepcopy.go.
func TestCRDsAreNotStale(t *testing.T) {
	require.Integration(t) // runs controller-gen from the module proxy
	download := exec.Command("go", "mod", "download", strings.Replace(controllerGen, "/cmd/controller-gen", "", 1))
	download.Dir = os.TempDir() // outside the module: no go.mod change
	download.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := download.CombinedOutput(); err != nil {
		require.Missing(t, "module proxy unreachable, cannot fetch %s: %v\n%s", controllerGen, err, out)
	}
	out := t.TempDir()
	gen := exec.Command("go", "run", controllerGen, "crd:crdVersions=v1", "paths=./kube/api/...",
		"output:crd:artifacts:config="+out)
	gen.Dir = ".."
	if msg, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, msg)
	}
	objects := t.TempDir()
	genObjects := exec.Command("go", "run", controllerGen, "object", "paths=./kube/api/...", "output:object:dir="+objects)
	genObjects.Dir = ".."
	if msg, err := genObjects.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen object: %v\n%s", err, msg)
	}
	const deepcopy = "zz_generated.deepcopy.go"
	generated, _ := os.ReadFile(filepath.Join(objects, deepcopy))
	committed, _ := os.ReadFile(filepath.Join("..", "kube", "api", "v1alpha1", deepcopy))
	if len(generated) == 0 || !bytes.Equal(generated, committed) {
		t.Errorf("kube/api/v1alpha1/%s is stale: run `go generate ./kube/api/...`", deepcopy)
	}
	want, _ := filepath.Glob(filepath.Join(out, "*.yaml"))
	have, _ := filepath.Glob(filepath.Join("crds", "*.yaml"))
	if len(want) != len(have) {
		t.Errorf("deploy/crds has %d files, controller-gen writes %d", len(have), len(want))
	}
	for _, w := range want {
		generated, _ := os.ReadFile(w)
		name := filepath.Base(w)
		committed, err := os.ReadFile(filepath.Join("crds", name))
		if err != nil {
			t.Errorf("deploy/crds/%s: %v", name, err)
			continue
		}
		if !bytes.Equal(generated, committed) {
			t.Errorf("deploy/crds/%s is stale: run `go generate ./kube/api/...`", name)
		}
	}
}
