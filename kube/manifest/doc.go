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
// Watching: FileSource follows edits with inotify. It watches the
// directory (or the file and its directory), each manifest through its
// symbolic links, and the path's entry in its parent, so an atomic rename,
// a ConfigMap mount's "..data" swap, an edit of a link's target and the
// path deleted and re-created are all seen; the watches are re-aimed after
// every read. Events are coalesced: the files are read once they were left
// alone for the quiet period (default 5ms), at the latest the maximum delay
// (default 50ms; it doubles, up to 1s, while events keep coming, and returns
// to 50ms once they go quiet: Window) after the first event, but not while a manifest file is
// being written in place (modified and not yet closed, for up to 1s). A
// read whose content cannot be used (perhaps a write still in progress) is
// read again after twice the maximum delay (at least 100ms) before the
// error is reported; a later good edit supersedes it silently. The path is
// also read every poll interval (default 5s) in case an event was missed
// (inotify queue overflow, network file systems), and every 500ms when
// inotify is unavailable; a change found that way is applied once two
// reads agree. An Update is emitted when the State, the problems or the
// error changed; State.Generation increases only when the State changed;
// Update.Observed is when the first event of the change was seen. An edit
// that cannot be read keeps the last good State and is reported in
// Update.Err.
package manifest
