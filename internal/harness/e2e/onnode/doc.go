// Package onnode runs sllbrd where its users run it: on a Kubernetes node
// (internal/harness/node: kubelet, containerd, kube-proxy, Debian's CNI
// plugins behind the test-only multinet), from the image `make image`
// writes and the manifests of deploy/, applied with kubectl as a user
// applies them. A DC gateway (BIRD) and a client (a gateway-only lab,
// internal/harness/lab) attach to the node's gateway bridge.
//
// The package holds only its test, TestIntegrationOnNode (`make test` runs
// it on its own, after the other tests; `make demo DEMO=node` shows it):
//
//  1. kubectl apply -k of deploy/ through an overlay that changes only the
//     image reference, and the Gateway API CRDs: the controller becomes
//     Ready, one replica leads;
//  2. the seed's objects (deploy/examples) and UDP and SCTP routes: the
//     SLLBR pods start with exactly the documented privileges, become Ready,
//     and BIRD learns the VIPs over BGP with BFD;
//  3. the example application (deploy/examples/target-application.yaml,
//     its application container the lab's responder) holds the VIPs;
//  4. traffic from the client through BIRD to the application pods, both
//     families;
//  5. operations under traffic: scaling, a deleted target pod, rollout
//     restarts, the leader controller killed, the kubelet and containerd
//     restarted, `sllbrd show` and `sllbrd explain` through kubectl exec;
//  6. a kubelet that refuses the unsafe sysctls, reported on the Gateway;
//  7. each container's working set at rest from the kubelet's summary API;
//  8. the node daemon (the component deploy/target-node, pointed at this
//     node's containerd socket and network namespace mounts): it starts
//     with exactly its documented privileges and leaves the sidecar pods
//     alone; deploy/examples/node-daemon/target-application.yaml moves the
//     application to it by a rolling update under load; it is restarted
//     under load, follows SLLBR scaling, configures a pod created while it
//     was away (which no flow reaches before), and its cleanup component
//     removes everything it applied.
//
// The test brings the node up and takes it down, unless a node is already
// up (make node-up): then it uses that node and leaves it up.
package onnode
