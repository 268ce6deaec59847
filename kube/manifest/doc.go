// Package manifest is the static-file source of sllbrd: it reads the objects
// a cluster would hold (Gateway, L34Route, Service, EndpointSlice,
// GatewayRouter, and the Secrets holding BGP passwords) from a YAML/JSON
// file or a directory of them, translates them with kube/translate and
// follows edits.
//
// Files: a path that is a file is read whatever its name; a directory
// contributes its *.yaml, *.yml and *.json files (not recursive; names
// starting with "." are skipped, symbolic links are followed, so a mounted
// ConfigMap works). Files are read in name order; each may hold several
// documents separated by "---", and a v1 List is read item by item.
//
// Kinds: gateway.networking.k8s.io/v1 and v1beta1 Gateway, v1 Service,
// discovery.k8s.io/v1 EndpointSlice, v1alpha1 L34Route and GatewayRouter,
// and v1 Secret (only the keys GatewayRouters reference are used; their
// values are never logged, nor quoted in errors). Other kinds are ignored with a debug log line. Decoding is
// strict like kubectl's default: malformed YAML, an unknown field, a missing
// apiVersion/kind/name, or the same object defined twice is an error naming
// the file and the document (numbered from 1).
//
// Namespaces: an object without metadata.namespace is in "default". The
// Gateway's namespace scopes everything: objects in other namespaces are
// ignored by the translator. The Gateway is chosen by name, or by
// "namespace/name" when several namespaces define one with that name.
//
// Watching: FileSource polls the path (every 500ms by default), hashing the
// content of the files; a change is applied once the content has stayed the
// same for one more poll (debounce). An Update is emitted when the State,
// the problems or the error changed; State.Generation increases only when
// the State changed. An edit that cannot be read keeps the last good State
// and is reported in Update.Err.
package manifest
