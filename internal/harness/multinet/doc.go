// Package multinet is a CNI meta-plugin for the test node that does Multus'
// documented job for one node (Multus itself is not available here). It is
// test harness: never part of the sllbrd image or of deploy/.
//
// The node installs the binary (cmd/multinet, BuildPlugin) as TypeName in
// the runtime's CNI bin dir, writes Config.Marshal as ConfFileName, the only
// file of the runtime's CNI conf dir, installs CRDYAML and ClusterRoleYAML,
// and binds ClusterRoleName to the identity of Config.Kubeconfig.
//
// Contract, per CNI command (spec 1.0.0; delegates may use 0.4.0 or 1.0.0):
//   - ADD reads the pod named by CNI_ARGS (K8S_POD_NAMESPACE, K8S_POD_NAME)
//     and refuses it when K8S_POD_UID is set and differs from the pod's
//     UID; parses its NetworksAnnotation in both of Multus' forms
//     (ParseNetworks) and reads each NetworkAttachmentDefinition's
//     spec.config. All of that is validated before anything is added. It
//     then delegates the default network (Config.DefaultNetwork) on
//     CNI_IFNAME, then each secondary network on its requested interface or
//     net<N> (N its position in the annotation, from 1), by executing the
//     plugins found in CNI_PATH as libcni does (a list's plugins in order,
//     each with the previous result as prevResult), with the same
//     CNI_CONTAINERID, CNI_NETNS, CNI_ARGS and CNI_PATH. It writes
//     NetworkStatusAnnotation (a merge patch of that annotation, refused by
//     the API server for a pod of another UID) and returns the default
//     network's result as a CNIVersion result. When anything fails after
//     the first delegation it deletes everything it delegated (in reverse
//     order) and fails with a CNI error whose message names the network and
//     the cause.
//   - DEL needs neither the pod nor the NetworkAttachmentDefinitions: it
//     deletes, in reverse order, what the ADD recorded in Config.CacheDir
//     for CNI_CONTAINERID and CNI_IFNAME (each delegate is recorded before
//     it runs, so an interrupted ADD is undone too), then removes the
//     record; a failure keeps the record for the next DEL. Without a record
//     it deletes the default network only; a record it cannot read fails
//     DEL rather than guess. DEL is idempotent.
//   - CHECK runs CHECK on the recorded delegates, each with its result;
//     VERSION answers CNIVersion. GC and STATUS (CNI 1.1) are not
//     implemented.
//
// Inputs are validated at the boundary: the configuration strictly
// (ParseConfig), CNI variables, interface names (1-15 bytes, no '/', ':' or
// whitespace), DNS-1123 names of namespaces and networks, the annotation's
// JSON shape (unsupported selection keys such as ips or mac are errors) and
// each spec.config (a conf or a conflist whose plugin types are plain file
// names other than multinet). Failures are CNI error objects on stdout with
// a non-zero exit (Main, ErrorJSON); Config.LogFile gets one line per
// action naming the command, the pod and the container.
package multinet
