// Package deploy is the home of the Kubernetes manifests of sllbrd (CRDs,
// RBAC, the admission policy of the target sidecars, the controller's
// Deployment, the SLLBR Deployment template, a kustomization, the seed's
// example objects, deploy/monitoring: the PodMonitors and the Grafana
// dashboard, and deploy/target-node: the optional kustomize component of
// the node daemon with its RBAC, its admission policy and a cleanup
// component for uninstalling) and of the tests that keep them sound: every
// YAML file parses, the kustomizations list files that exist, the RBAC
// grants only what docs/deploy.md and docs/controller.md say (each
// ServiceAccount to the roles reviewed there), the node daemon's
// privileges are exactly those docs/deploy.md explains, the admission
// policies refuse what docs/target.md and docs/deploy.md say on a real
// kube-apiserver with pod-bound tokens, the component builds with
// kustomize, deploy/crds matches what controller-gen generates from
// kube/api/v1alpha1, the PodMonitors select the pods they scrape, and the
// admin socket's directory is writable in the read-only SLLBR container
// (internal/metrics checks the dashboard's queries against the registry).
// Its only code is SLLBRDeploymentTemplate, the template embedded in the
// binary as the controller's default.
package deploy
