// Package kube is the only part of sllbrd that knows Kubernetes. It names the
// labels and annotations that tie cluster objects to one Gateway; its
// subpackages hold the rest:
//
//   - kube/api/v1alpha1: the L34Route and GatewayRouter API types (group
//     meridio.experiment.gateway.api.poc) and their CRDs (deploy/crds).
//   - kube/translate: the one function that turns a snapshot of typed objects
//     into a model.State plus a list of structured problems.
//   - kube/manifest: a source that reads the same objects from YAML/JSON
//     files, translates them and follows edits.
//
// Nothing outside kube imports Kubernetes packages: consumers receive plain
// model values.
package kube
