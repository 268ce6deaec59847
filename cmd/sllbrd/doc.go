// Command sllbrd is the Stateless-Load-Balancer-Router of a Meridio 2.x
// Gateway: it reads the Gateway's configuration (from static manifest files
// or the API server), balances VIP traffic from nfqueue over the Services'
// endpoints, and attracts that traffic from the data-centre gateways with
// BGP supervised by BFD.
//
// `sllbrd controller` is the controller-manager of the same product, in the
// same binary (kube/controller; flags in controller.go): it writes the
// EndpointSlices with identifiers, the status of the Gateway API and sllbrd
// objects, the SLLBR Deployment of each Gateway, and the desired network
// configuration of the target pods.
//
// `sllbrd target` is the sidecar of an application pod (kube/targetpod,
// internal/targetnet; flags in target.go): it applies its own pod's
// desired network configuration (VIPs on lo, routes from the VIPs over the
// SLLBR pods) in the pod's network namespace and reports what it applied.
//
// `sllbrd show`, `sllbrd explain` and `sllbrd log-level` are clients of a
// running daemon's admin socket (internal/admin; show.go): the daemon
// answers from its engine (Inspect, Explain), BGP speaker, BFD server and a
// record of its applies (admin.go, admin_status.go, admin_daemon.go).
// Every role serves pprof on a loopback address when asked
// (--pprof-address, admin_servers.go; docs/operations.md).
//
// The diagnostics servers of every role (the admin socket, the HTTP
// endpoint of /metrics, /healthz and /readyz, pprof; admin_servers.go) are
// opened at start, where a failure stops the start, and then kept serving
// by admin.Diagnostics outside the role's errgroup: their failures are
// logged and counted, never end the role, and so never take the
// dataplane's rules and routes with them.
//
// This package only wires: flags, signals, one errgroup, the admin HTTP
// endpoint and socket, and the reconcile loop's apply (applier), which
// programs the dataplane, applies the GatewayRouters and announces the
// served VIPs in one retried pass. Everything it starts lives in the packages it imports.
//
// Endpoint liveness (docs/liveness.md; liveness*.go): the SLLBR's
// internal/liveness prober follows the API-ready endpoints of the Services
// whose liveness is on with probe icmp, BFD sessions on the Uplink's BFD
// server (liveness_bfd*.go) those with probe bfd, and the union of their
// dead sets is a part of the reconcile loop's desired state
// (Loop.SetDead). The applier programs a copy of the
// configuration in which those endpoints are not ready (withoutDead: they
// leave this SLLBR's Maglev tables and keep their identifiers and marks),
// so the VIPs announced follow from it too; it counts the table entries
// each change moved. Transitions are metrics, shown by sllbrd show, and
// rate-limited Events regarding the Service (log lines with --manifests).
package main
