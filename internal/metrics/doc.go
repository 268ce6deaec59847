// Package metrics exports sllbrd's state to Prometheus and serves the admin
// HTTP endpoint (/metrics, /healthz, /readyz).
//
// Every collector reads the live counters of the component it describes at
// scrape time: there is no second set of counters to keep in step and nothing
// runs on the packet path. Scrapes may allocate; the data plane never sees
// them.
//
//   - EngineCollector: the decision engine (verdict reasons, per route and per
//     endpoint traffic, undecodable packets, the fragment table, the committed
//     configuration generation).
//   - NFQueueCollector: the user-space counters of each nfqueue reader and the
//     kernel's view of the queues (/proc/net/netfilter/nfnetlink_queue).
//   - BFDCollector: BFD sessions (state, timers, packets, discards).
//   - BGPCollector: BGP peers, from a function the caller fills ([]BGPPeer);
//     this package does not depend on the bgp package.
//   - Config: configuration applies (result, latency from change seen to
//     data plane programmed, last applied generation, problems, failures
//     of each component of an apply: dataplane, gateway routers, VIP
//     announcement).
//   - LivenessCollector: the SLLBR's endpoint liveness probes (each probed
//     endpoint alive or dead, transitions, probes, replies by result, the
//     Maglev entries liveness moved, the Events recorded), from a
//     LivenessSource the caller implements.
//   - ReadyGauge: sllbrd_ready, evaluated from the same function as /readyz.
//   - BFDStateLabel, BFDDiagnosticLabel: the label values of the BFD
//     session metrics, for other views of the sessions (sllbrd show).
//
// Promises:
//   - Metric names start with sllbrd_, counters end in _total and values
//     are in base units (seconds, bytes); the full exposition passes promlint.
//   - Label sets are bounded by configuration (routes, services, endpoints,
//     queues, peers) and by fixed enumerations (reasons, states, results);
//     no label carries free-form text such as error messages.
//   - Enumerated states (BFD and BGP session state) are exported in the
//     enum-gauge pattern: one series per possible state, 1 for the current.
//   - Server binds exactly the address it is given; sllbrd's default is the
//     loopback address 127.0.0.1:9100, so the endpoint is not reachable from
//     the network unless the operator asks for it. It serves only /metrics,
//     /healthz and /readyz (everything else is 404), applies read and write
//     timeouts and shuts down gracefully when Run's context ends. A failing
//     collector is logged and the rest of the exposition is still served.
package metrics
