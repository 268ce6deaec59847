// Package apiserver is the Kubernetes API-server source of sllbrd: it
// watches, in one namespace, the objects that configure one Gateway,
// translates them with kube/translate and emits manifest.Update values, so
// that a caller treats it exactly like the file source (kube/manifest).
//
// Watched (namespace-scoped informers, nothing cluster-wide):
//   - the Gateway named by the caller (field selector metadata.name);
//   - every L34Route of the namespace (the translator keeps those whose
//     parentRef names the Gateway);
//   - Services and GatewayRouters labelled
//     service.kubernetes.io/service-proxy-name=<gateway>;
//   - EndpointSlices that carry the kubernetes.io/service-name label (the
//     translator keeps those of the selected Services);
//   - the Secrets that GatewayRouters name in spec.bgp.passwordSecretRef,
//     each with its own watch selecting metadata.name (so an RBAC rule with
//     resourceNames suffices), started and stopped as routers name them.
//
// The informers cache trimmed objects (trim.go): no managedFields, no
// kubectl last-applied annotation, Services without spec and status,
// Gateways without listeners and status; Secrets keep name and data only.
//
// Promises:
//   - Nothing is emitted before every informer has completed its first full
//     list (first sync).
//   - Bursts of events are coalesced: a rebuild happens once no event arrived
//     for the debounce period (default 5ms), and at the latest after the
//     maximum delay (default 50ms) from the first event of a burst; the
//     maximum delay doubles while a burst goes on (up to 1s) and returns to
//     50ms once events go quiet (manifest.Window), so a long burst of writes
//     costs a few rebuilds, and the reconcile loop's widening interval
//     between applies bounds the reprogramming. Update.Observed is when the burst's first event came.
//   - An Update is emitted when the State, the problems or the error changed;
//     State.Generation increases only when the translated State changed, so a
//     relist after an API-server restart that finds the same objects emits
//     nothing.
//   - When the API server is unreachable the informers keep their caches, the
//     last State stays, and Ready reports false with the reason. Any list or
//     watch failure, error in a watch stream (e.g. 410 Gone) or failed
//     /readyz probe is an interruption; Ready turns true again only when the
//     watches have resumed: the server answers, every informer has a watch
//     stream open, each informer's cache holds what a consistent read of the
//     server (a LIST at resource version "") returned after that, or a later
//     change, and a state built from those caches was emitted. So a write
//     made before Ready turns true is in the emitted state. On a quiet
//     cluster the read and the cache agree at once (no wait for a bookmark).
//     The informers (kube/informer) relist as soon as the server answers,
//     however many restarts came before.
//   - Each translator Problem becomes one Kubernetes Event of type Warning on
//     the offending object (reasons InvalidGateway, InvalidL34Route,
//     InvalidService, InvalidGatewayRouter, InvalidEndpointIdentifier,
//     InvalidEndpoint) when it first appears; a problem that persists is not
//     reported again until it has gone away and come back.
package apiserver
