// Package deploy holds no code: it is the home of the Kubernetes manifests
// of sllbrd (CRDs, RBAC, the SLLBR Deployment, a kustomization and the
// seed's example objects) and of the tests that keep them sound: every YAML
// file parses, the kustomization lists files that exist, the RBAC grants
// only what docs/deploy.md says, and deploy/crds matches what controller-gen
// generates from kube/api/v1alpha1.
package deploy
