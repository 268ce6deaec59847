// Package deploy is the home of the Kubernetes manifests of sllbrd (CRDs,
// RBAC, the controller's Deployment, the SLLBR Deployment template, a
// kustomization and the seed's example objects) and of the tests that keep
// them sound: every YAML file parses, the kustomization lists files that
// exist, the RBAC grants only what docs/deploy.md and docs/controller.md
// say, and deploy/crds matches what controller-gen generates from
// kube/api/v1alpha1. Its only code is SLLBRDeploymentTemplate, the
// template embedded in the binary as the controller's default.
package deploy
