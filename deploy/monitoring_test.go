package deploy

import (
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/sllbrd/sllbrd/internal/admin"
)

// podMonitor is the part of a Prometheus Operator PodMonitor the tests
// read (its CRD types are not a dependency).
type podMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		PodMetricsEndpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// TestPodMonitorsScrapeThePods: each PodMonitor selects the pods of its
// Deployment (and only those) on a container port that serves /metrics on
// the pod address.
func TestPodMonitorsScrapeThePods(t *testing.T) {
	deployments := map[string]string{"sllbrd": "sllbrd/deployment.yaml", "sllbrd-controller": "controller/deployment.yaml"}
	pods := map[string]map[string]string{}
	for name, file := range deployments {
		var d appsv1.Deployment
		if err := yaml.Unmarshal(documents(t, file)[0], &d); err != nil {
			t.Fatal(err)
		}
		pods[name] = d.Spec.Template.Labels
	}
	docs := documents(t, "monitoring/podmonitors.yaml")
	if len(docs) != len(deployments) {
		t.Fatalf("%d PodMonitors, want one per Deployment (%d)", len(docs), len(deployments))
	}
	for _, doc := range docs {
		var pm podMonitor
		if err := yaml.UnmarshalStrict(doc, &pm); err != nil {
			t.Fatalf("PodMonitor: %v", err)
		}
		file, ok := deployments[pm.Metadata.Name]
		if pm.APIVersion != "monitoring.coreos.com/v1" || pm.Kind != "PodMonitor" || !ok || len(pm.Spec.PodMetricsEndpoints) != 1 {
			t.Fatalf("PodMonitor %+v", pm)
		}
		for name, labels := range pods {
			if selects(pm.Spec.Selector.MatchLabels, labels) != (name == pm.Metadata.Name) {
				t.Errorf("PodMonitor %s selector %v against the pods of %s (%v)", pm.Metadata.Name, pm.Spec.Selector.MatchLabels, name, labels)
			}
		}
		ep := pm.Spec.PodMetricsEndpoints[0]
		var d appsv1.Deployment
		if err := yaml.Unmarshal(documents(t, file)[0], &d); err != nil {
			t.Fatal(err)
		}
		c := d.Spec.Template.Spec.Containers[0]
		if !slices.ContainsFunc(c.Ports, func(p corePort) bool { return p.Name == ep.Port }) || ep.Path != "/metrics" {
			t.Errorf("PodMonitor %s scrapes port %q path %q; %s has ports %+v", pm.Metadata.Name, ep.Port, ep.Path, file, c.Ports)
		}
		if !slices.Contains(c.Args, "--metrics-address=:9100") {
			t.Errorf("%s: Prometheus cannot scrape a loopback --metrics-address: args %v", file, c.Args)
		}
	}
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// TestMonitoringKustomization lists the files it names.
func TestMonitoringKustomization(t *testing.T) {
	data, err := os.ReadFile("monitoring/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources          []string `json:"resources"`
		ConfigMapGenerator []struct {
			Files []string `json:"files"`
		} `json:"configMapGenerator"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	files := slices.Clone(k.Resources)
	for _, g := range k.ConfigMapGenerator {
		files = append(files, g.Files...)
	}
	if !slices.Contains(files, "podmonitors.yaml") || !slices.Contains(files, "sllbrd-dashboard.json") {
		t.Errorf("kustomization names %v", files)
	}
	for _, f := range files {
		if _, err := os.Stat(path.Join("monitoring", f)); err != nil {
			t.Error(err)
		}
	}
}

// TestAdminSocketDirectoryIsWritable: the root filesystem is read-only, so
// the admin socket's directory must be a volume, or `kubectl exec ... sllbrd
// show` has nothing to talk to (sllbrd would not start).
func TestAdminSocketDirectoryIsWritable(t *testing.T) {
	var d appsv1.Deployment
	if err := yaml.Unmarshal(documents(t, "sllbrd/deployment.yaml")[0], &d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	socket := admin.DefaultSocket
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--admin-socket="); ok {
			socket = v
		}
	}
	dir := path.Dir(socket)
	if !slices.ContainsFunc(c.VolumeMounts, func(m volumeMount) bool { return m.MountPath == dir && !m.ReadOnly }) {
		t.Errorf("no writable volume at %s (the admin socket %s): mounts %+v", dir, socket, c.VolumeMounts)
	}
}

type (
	corePort    = corev1.ContainerPort
	volumeMount = corev1.VolumeMount
)
