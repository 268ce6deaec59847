// Package admin is sllbrd's local administration interface: a unix socket
// the running daemon serves and `sllbrd show`, `sllbrd explain` and
// `sllbrd log-level` call, plus the optional pprof endpoint.
//
// # Protocol
//
// One request per connection: the client writes one JSON Request (at most
// MaxRequestBytes), the server answers one JSON Response (Result, the JSON
// of the command's result type, or Error) and closes the connection. Each
// connection is bounded by a timeout (DefaultTimeout) for reading,
// answering and writing; at most DefaultMaxConns are served at once, more
// are answered with an error. The result types (types.go) are the stable
// `-o json` schema: fields are added, never renamed or removed.
//
// # Who may use the socket
//
//   - Listen creates the socket's directory when missing with mode 0750,
//     the socket with mode 0660, both owned by sllbrd's user (root in the
//     SLLBR pod) and, with WithGroup, by that group: only root, sllbrd's
//     user and the group's members can connect. An existing directory
//     (e.g. /run) is left alone, unless it is sllbrd's and writable by
//     others without the sticky bit (a Kubernetes emptyDir is 0777): it
//     then gets mode 0750 and the group too, so nobody else can replace
//     the socket.
//   - As defence in depth the server checks every connection's peer
//     credentials (SO_PEERCRED, taken by the kernel at connect): uid 0,
//     sllbrd's own uid, or, with a group, a process whose primary or
//     supplementary group (/proc/PID/status) is that group. Others get an
//     error response and a warning in the log.
//   - A stale socket of an earlier run is removed; a path that is not a
//     socket, or a socket another process answers on, is an error.
//
// The package knows nothing of Kubernetes, BGP or the dataplane: the
// daemon implements Backend and fills the result types.
//
// # pprof
//
// ListenPprof and ServePprof serve net/http/pprof on its own address,
// which must be a loopback address (CheckLoopback): profiles are never
// served to the network.
//
// # Diagnostics never stop what they diagnose
//
// Diagnostics keeps the daemon's diagnostics servers (this socket, the
// metrics endpoint, pprof) serving on their own: an accept that fails for
// a reason that passes (EMFILE and ENFILE above all, ENOMEM, an aborted
// connection) is retried with backoff (Diagnostics.Listener; the socket
// always retries, WithDiagnostics says where it reports); a server that
// stops serving for another reason is opened again with backoff (Start,
// Kept.Run), and Kept.Run returns only when its context ends. Failures
// are logged and counted (Health, which the daemon exports as metrics);
// none ends the daemon or changes its readiness: an SLLBR pod that is not
// ready stops being a next hop, which would stop forwarding for the sake
// of a diagnostics endpoint. Only opening a server at start may fail the
// start (a bad address, a port in use).
package admin
