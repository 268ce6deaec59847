package deploy

import (
	"maps"
	"path"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// The node daemon's component (deploy/target-node) and names the tests
// share.
const (
	targetNodeDir   = "target-node"
	targetNodeName  = "sllbrd-target-node" // its ServiceAccount, ClusterRole, DaemonSet, label value
	targetNodeLabel = "app.kubernetes.io/name"
	runtimeSocket   = "/run/containerd/containerd.sock"
)

// targetNodeDaemonSet returns deploy/target-node/daemonset.yaml.
func targetNodeDaemonSet(t *testing.T) appsv1.DaemonSet {
	t.Helper()
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(documents(t, path.Join(targetNodeDir, "daemonset.yaml"))[0], &ds); err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestTargetNodeDaemonSet pins the node daemon's privileges to what
// docs/deploy.md ("The node daemon") explains: root with exactly SYS_ADMIN
// and NET_ADMIN, no host namespace, not privileged, no privilege
// escalation, a read-only root, the RuntimeDefault seccomp filter, and
// exactly two host paths, read-only: the runtime's socket directory and the
// network namespace mounts (HostToContainer, so later ones appear). Also
// its contract with `sllbrd target --node`: the node from the downward
// API, the runtime endpoint inside the mounted directory, probes, one
// daemon per node during updates.
func TestTargetNodeDaemonSet(t *testing.T) {
	ds := targetNodeDaemonSet(t)
	if ds.Name != targetNodeName || ds.Spec.Selector == nil || !selects(ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels) {
		t.Errorf("DaemonSet %s: selector %v, template labels %v", ds.Name, ds.Spec.Selector, ds.Spec.Template.Labels)
	}
	u := ds.Spec.UpdateStrategy
	if u.Type != appsv1.RollingUpdateDaemonSetStrategyType || u.RollingUpdate == nil ||
		u.RollingUpdate.MaxUnavailable == nil || *u.RollingUpdate.MaxUnavailable != intstr.FromInt32(1) ||
		u.RollingUpdate.MaxSurge == nil || *u.RollingUpdate.MaxSurge != intstr.FromInt32(0) {
		t.Errorf("update strategy %+v: want RollingUpdate, maxUnavailable 1, maxSurge 0 (never two daemons on a node)", u)
	}
	pod := ds.Spec.Template.Spec
	if pod.ServiceAccountName != targetNodeName || pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken {
		t.Errorf("service account %q, automount %v: want %s's pod-bound token", pod.ServiceAccountName, pod.AutomountServiceAccountToken, targetNodeName)
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC || (pod.ShareProcessNamespace != nil && *pod.ShareProcessNamespace) || pod.HostUsers != nil {
		t.Errorf("host namespaces: network %v, PID %v, IPC %v, shared PID %v, users %v: want none set",
			pod.HostNetwork, pod.HostPID, pod.HostIPC, pod.ShareProcessNamespace, pod.HostUsers)
	}
	if sc := pod.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v: want the RuntimeDefault seccomp profile", sc)
	}
	if !slices.Equal(pod.Tolerations, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}) || pod.PriorityClassName != "system-node-critical" {
		t.Errorf("tolerations %+v, priority class %q: want every taint tolerated and system-node-critical", pod.Tolerations, pod.PriorityClassName)
	}
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 || len(pod.EphemeralContainers) != 0 {
		t.Fatalf("%d containers, %d init containers: want one", len(pod.Containers), len(pod.InitContainers))
	}
	c := pod.Containers[0]
	checkTargetNodeContainer(t, c)
	checkTargetNodePrivileges(t, c)
	checkTargetNodeHostPaths(t, pod.Volumes, c.VolumeMounts)
}

// checkTargetNodeContainer checks the command line, the image and the
// probes of the daemon's container.
func checkTargetNodeContainer(t *testing.T, c corev1.Container) {
	t.Helper()
	var ctl appsv1.Deployment
	if err := yaml.Unmarshal(documents(t, "controller/deployment.yaml")[0], &ctl); err != nil {
		t.Fatal(err)
	}
	if image := ctl.Spec.Template.Spec.Containers[0].Image; c.Image != image {
		t.Errorf("image %q, want the controller's %q (one image, set once with kustomize)", c.Image, image)
	}
	want := []string{"target", "--node=$(NODE_NAME)", "--runtime-endpoint=unix://" + runtimeSocket, "--metrics-address=:9180"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args %v, want %v", c.Args, want)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "NODE_NAME" || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef == nil ||
		c.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("env %+v: want NODE_NAME from spec.nodeName", c.Env)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != 9180 {
		t.Errorf("ports %+v: want metrics 9180 (--metrics-address)", c.Ports)
	}
	for _, p := range []struct {
		probe *corev1.Probe
		path  string
	}{{c.LivenessProbe, "/healthz"}, {c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port != intstr.FromString("metrics") {
			t.Errorf("probe %+v: want GET %s on port metrics", p.probe, p.path)
		}
	}
	r := c.Resources
	if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() || r.Limits.Memory().IsZero() || !r.Limits.Cpu().IsZero() {
		t.Errorf("resources %+v: want CPU and memory requests and a memory limit (no CPU limit)", r)
	}
}

// checkTargetNodePrivileges checks the container's security context.
func checkTargetNodePrivileges(t *testing.T, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil {
		t.Fatalf("security context %+v", sc)
	}
	add := slices.Clone(sc.Capabilities.Add)
	slices.Sort(add)
	if !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || !slices.Equal(add, []corev1.Capability{"NET_ADMIN", "SYS_ADMIN"}) {
		t.Errorf("capabilities drop %v add %v: want drop ALL, add SYS_ADMIN and NET_ADMIN", sc.Capabilities.Drop, sc.Capabilities.Add)
	}
	if sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("privileged %v, allowPrivilegeEscalation %v, readOnlyRootFilesystem %v", sc.Privileged, sc.AllowPrivilegeEscalation, sc.ReadOnlyRootFilesystem)
	}
	if sc.RunAsUser == nil || *sc.RunAsUser != 0 || sc.ProcMount != nil || sc.SeccompProfile != nil || sc.AppArmorProfile != nil || sc.SELinuxOptions != nil {
		t.Errorf("security context %+v: want UID 0 (the runtime's socket is root's) and the pod's seccomp profile", sc)
	}
}

// checkTargetNodeHostPaths checks that the pod has exactly the two host
// paths, mounted read-only where the daemon looks.
func checkTargetNodeHostPaths(t *testing.T, volumes []corev1.Volume, mounts []corev1.VolumeMount) {
	t.Helper()
	directory, orCreate := corev1.HostPathDirectory, corev1.HostPathDirectoryOrCreate
	want := map[string]corev1.HostPathVolumeSource{
		"runtime": {Path: path.Dir(runtimeSocket), Type: &directory},
		"netns":   {Path: "/run/netns", Type: &orCreate},
	}
	if len(volumes) != len(want) {
		t.Errorf("%d volumes, want %d: %+v", len(volumes), len(want), volumes)
	}
	for _, v := range volumes {
		w, ok := want[v.Name]
		if h := v.HostPath; !ok || h == nil || h.Path != w.Path || h.Type == nil || *h.Type != *w.Type {
			t.Errorf("volume %s %+v: want a hostPath %s of type %s", v.Name, v.VolumeSource, w.Path, *w.Type)
		}
	}
	hostToContainer := corev1.MountPropagationHostToContainer
	wantMounts := []corev1.VolumeMount{
		{Name: "runtime", MountPath: path.Dir(runtimeSocket), ReadOnly: true},
		{Name: "netns", MountPath: "/run/netns", ReadOnly: true, MountPropagation: &hostToContainer},
		{Name: "netns", MountPath: "/var/run/netns", ReadOnly: true, MountPropagation: &hostToContainer},
	}
	if !slices.EqualFunc(mounts, wantMounts, func(a, b corev1.VolumeMount) bool {
		return a.Name == b.Name && a.MountPath == b.MountPath && a.ReadOnly == b.ReadOnly && a.SubPath == "" && a.SubPathExpr == "" &&
			(a.MountPropagation == nil) == (b.MountPropagation == nil) && (a.MountPropagation == nil || *a.MountPropagation == *b.MountPropagation)
	}) {
		t.Errorf("volume mounts %+v, want %+v", mounts, wantMounts)
	}
}

// TestTargetNodeRBAC pins the daemon's ClusterRole to get, list, watch and
// patch on pods (nothing else: no events, no subresource) and its binding
// to the daemon's ServiceAccount.
func TestTargetNodeRBAC(t *testing.T) {
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(documents(t, path.Join(targetNodeDir, "cluster_role.yaml"))[0], &role); err != nil {
		t.Fatal(err)
	}
	checkGrants(t, "ClusterRole "+role.Name, grants(role.Rules), map[string][]string{"/pods": {"list", "watch", "patch"}})
	var binding rbacv1.ClusterRoleBinding
	if err := yaml.UnmarshalStrict(documents(t, path.Join(targetNodeDir, "cluster_role_binding.yaml"))[0], &binding); err != nil {
		t.Fatal(err)
	}
	if binding.RoleRef.Kind != "ClusterRole" || binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 ||
		binding.Subjects[0].Kind != rbacv1.ServiceAccountKind || binding.Subjects[0].Name != targetNodeName {
		t.Errorf("ClusterRoleBinding %+v: want ClusterRole %s for ServiceAccount %s", binding, role.Name, targetNodeName)
	}
}

// componentFile is the part of a kustomize Component the tests read.
type componentFile struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Patches    []struct {
		Target struct {
			Group   string `json:"group"`
			Version string `json:"version"`
			Kind    string `json:"kind"`
			Name    string `json:"name"`
		} `json:"target"`
		Patch string `json:"patch"`
	} `json:"patches"`
}

func readComponent(t *testing.T, dir string) componentFile {
	t.Helper()
	var k componentFile
	if err := yaml.UnmarshalStrict(documents(t, path.Join(dir, "kustomization.yaml"))[0], &k); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1alpha1" || k.Kind != "Component" {
		t.Errorf("%s: %s %s, want a kustomize Component", dir, k.APIVersion, k.Kind)
	}
	return k
}

// TestTargetNodeComponent: deploy/target-node is a kustomize Component
// that lists every file of its directory, deploy/ does not include it (it
// is optional), every object it adds carries the label the uninstall
// deletes by, and deploy/target-node/cleanup adds --cleanup to the
// daemon's arguments and nothing else. TestIntegrationTargetNodeBuild
// builds both with kustomize.
func TestTargetNodeComponent(t *testing.T) {
	k := readComponent(t, targetNodeDir)
	for _, f := range yamlFiles(t) {
		if path.Dir(f) == targetNodeDir && path.Base(f) != "kustomization.yaml" && !slices.Contains(k.Resources, path.Base(f)) {
			t.Errorf("%s is not listed in %s/kustomization.yaml", f, targetNodeDir)
		}
	}
	for _, r := range k.Resources {
		for _, doc := range documents(t, path.Join(targetNodeDir, r)) {
			var obj struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name   string            `json:"name"`
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				t.Fatalf("%s: %v", r, err)
			}
			if obj.Metadata.Labels[targetNodeLabel] != targetNodeName {
				t.Errorf("%s %s (%s): labels %v, want %s=%s (the uninstall deletes by it)", obj.Kind, obj.Metadata.Name, r, obj.Metadata.Labels, targetNodeLabel, targetNodeName)
			}
		}
	}
	var base kustomization
	if err := yaml.Unmarshal(documents(t, "kustomization.yaml")[0], &base); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(base.Resources, func(r string) bool { return strings.HasPrefix(r, targetNodeDir) }) {
		t.Errorf("deploy/kustomization.yaml includes %s: the node daemon is optional", targetNodeDir)
	}
	cleanup := readComponent(t, path.Join(targetNodeDir, "cleanup"))
	if len(cleanup.Resources) != 0 || len(cleanup.Patches) != 1 {
		t.Fatalf("cleanup component %+v: want one patch and no resources", cleanup)
	}
	p := cleanup.Patches[0]
	var ops []map[string]any
	if err := yaml.UnmarshalStrict([]byte(p.Patch), &ops); err != nil {
		t.Fatalf("cleanup patch: %v", err)
	}
	wantOp := map[string]any{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--cleanup"}
	if p.Target.Group != "apps" || p.Target.Kind != "DaemonSet" || p.Target.Name != targetNodeName || len(ops) != 1 || !maps.Equal(ops[0], wantOp) {
		t.Errorf("cleanup patch %+v %v: want %v on DaemonSet %s", p.Target, ops, wantOp, targetNodeName)
	}
}

// TestTargetApplicationNodeExample pins the example application of node
// mode to docs/deploy.md: the sidecar example's Deployment and pods
// without the sidecar and without anything of sllbrd but the Multus
// annotation: no agent annotation (absent means the node daemon), no
// ServiceAccount token, the RuntimeDefault seccomp filter, no capability.
func TestTargetApplicationNodeExample(t *testing.T) {
	docs := documents(t, "examples/node-daemon/target-application.yaml")
	if len(docs) != 1 {
		t.Fatalf("%d documents, want a Deployment", len(docs))
	}
	var d, sidecar appsv1.Deployment
	if err := yaml.UnmarshalStrict(docs[0], &d); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(documents(t, "examples/target-application.yaml")[4], &sidecar); err != nil {
		t.Fatal(err)
	}
	if d.Name != sidecar.Name || !maps.Equal(d.Spec.Template.Labels, sidecar.Spec.Template.Labels) {
		t.Errorf("Deployment %s labels %v: want the sidecar example's %s and labels %v", d.Name, d.Spec.Template.Labels, sidecar.Name, sidecar.Spec.Template.Labels)
	}
	a := d.Spec.Template.Annotations
	if len(a) != 1 || a[multusNetworks] != sidecar.Spec.Template.Annotations[multusNetworks] {
		t.Errorf("pod annotations %v: want only %s, as the sidecar example's", a, multusNetworks)
	}
	pod := d.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken || pod.ServiceAccountName != "" || len(pod.Volumes) != 0 {
		t.Errorf("automountServiceAccountToken %v, ServiceAccount %q, volumes %v: want no token and no ServiceAccount of sllbrd",
			pod.AutomountServiceAccountToken, pod.ServiceAccountName, pod.Volumes)
	}
	if sc := pod.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v, want the RuntimeDefault seccomp profile", sc)
	}
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		sc := c.SecurityContext
		if strings.Contains(c.Image, "sllbrd") || sc == nil || sc.Capabilities == nil || len(sc.Capabilities.Add) != 0 ||
			!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("container %s (%s): security context %+v: want no sllbrd and no capability", c.Name, c.Image, sc)
		}
	}
}

// multusNetworks is Multus' request for a pod's secondary networks.
const multusNetworks = "k8s.v1.cni.cncf.io/networks"
