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
//   - kube/apiserver: the same from a kube-apiserver, with namespace-scoped
//     informers, Warning Events on invalid objects and a readiness that says
//     when the API server is unreachable.
//   - kube/controller: `sllbrd controller`, which writes the EndpointSlices
//     (with identifiers), the status of the objects, the SLLBR Deployment
//     of each Gateway of sllbrd's GatewayClass and the desired network
//     configuration of the target pods.
//   - kube/targetpod: the target pods' two annotations and the agent of
//     `sllbrd target`, which applies them with internal/targetnet.
//
// Outside kube only cmd/sllbrd (to build the API-server client) and tests
// import Kubernetes packages: the dataplane, routing and model packages
// receive plain model values.
package kube
