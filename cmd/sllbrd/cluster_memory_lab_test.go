package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sllbrd/sllbrd/internal/harness/kubetest"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// The cluster test runs every `sllbrd target` sidecar as its container
// would run: in a memory cgroup of its own limited to the sidecar's limit
// in deploy/examples/target-application.yaml, from a copy of the binary
// that starts outside the page cache, so that the first sidecar is charged
// for the binary's pages it reads. A sidecar that thrashes under that limit
// (reads its code back from disk) fails the test.

// sidecarContainer is the sidecar's container in the example Deployment.
const sidecarContainer = "sllbrd-target"

// sidecarMemoryLimit returns the memory limit of the sidecar's container
// in deploy/examples/target-application.yaml.
func sidecarMemoryLimit(t *testing.T) uint64 {
	t.Helper()
	objs, err := kubetest.ReadObjects(filepath.Join(deployDir, "examples", "target-application.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range containers {
			c, ok := c.(map[string]any)
			if !ok || c["name"] != sidecarContainer {
				continue
			}
			limit, found, err := unstructured.NestedString(c, "resources", "limits", "memory")
			if err != nil || !found {
				t.Fatalf("target-application.yaml: container %s has no memory limit (%v)", sidecarContainer, err)
			}
			q, err := resource.ParseQuantity(limit)
			if err != nil || q.Value() <= 0 {
				t.Fatalf("target-application.yaml: memory limit %q: %v", limit, err)
			}
			return uint64(q.Value())
		}
	}
	t.Fatalf("target-application.yaml: no Deployment with a container %s", sidecarContainer)
	return 0
}

// sidecarBinary copies the sllbrd binary for the sidecars and drops the
// copy from the page cache.
func sidecarBinary(t *testing.T, l *lab.Lab) string {
	t.Helper()
	bin := filepath.Join(l.TempDir(), "sllbrd-sidecar")
	if err := lab.CopyUncached(sllbrdBinary, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// sidecarCgroup creates the memory cgroup of target's sidecar, limited to
// limit. The caller removes it (Close) once the sidecar has ended.
func sidecarCgroup(t *testing.T, l *lab.Lab, target string, limit uint64) *lab.MemCgroup {
	t.Helper()
	cg, err := lab.NewMemCgroup(fmt.Sprintf("sllbrd-sidecar-%s-%s-%d", l.RunID(), target, time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	if err := cg.SetLimit(limit); err != nil {
		_ = cg.Close()
		t.Fatal(err)
	}
	return cg
}

// watchSidecarFaults records p's major faults now (it is ready) and, when
// the test ends, before p is stopped, fails it if p took more than
// maxFaultRate major faults a second since, or if the OOM killer killed it. A
// sidecar the test stopped itself (its pod deleted) is not rated.
func watchSidecarFaults(t *testing.T, target string, p *lab.Process, cg *lab.MemCgroup, limit uint64) {
	t.Helper()
	start, err := lab.ReadProcStats(p.PID)
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now()
	t.Cleanup(func() {
		if kills, err := cg.OOMKills(); err != nil || kills != 0 {
			t.Errorf("%s's sidecar under its %d MiB limit: %d OOM kills (%v)", target, limit>>20, kills, err)
		}
		select {
		case <-p.Done():
			return
		default:
		}
		end, err := lab.ReadProcStats(p.PID)
		if err != nil {
			t.Error(err)
			return
		}
		faults := end.MajorFaults - start.MajorFaults
		rate := float64(faults) / time.Since(since).Seconds()
		t.Logf("%s's sidecar under its %d MiB limit: %d major faults in %v since ready (%d at start-up), RSS %.1f MiB",
			target, limit>>20, faults, time.Since(since).Round(time.Second), start.MajorFaults, mib(end.RSS))
		if rate > maxFaultRate {
			t.Errorf("%s's sidecar thrashes under its %d MiB limit (deploy/examples/target-application.yaml): %.1f major faults/s, want at most %d",
				target, limit>>20, rate, maxFaultRate)
		}
	})
}
