// Package reconcile runs the one loop that writes desired state to the
// kernel, in the manner of kube-proxy's bounded-frequency runner.
//
// It is the one place that applies desired state: the dataplane (rules,
// routes, tables), the GatewayRouters (BGP peers, BFD sessions) and the VIP
// announcement all go through its ApplyFunc, so a failure of any of them is
// retried the same way and shows in Status (readiness).
//
// Producers (the configuration source, the uplink supervisor, the endpoint
// liveness prober: SetState, SetGateways, SetGatewayGone, SetDead) set their
// part of the desired state at any rate; the loop applies the latest complete
// state. A change after a quiet period (counted from the end of the
// previous apply) is applied at once, and one that follows the previous
// apply waits at most MinInterval (50 ms) from its start;
// while changes keep coming during the waits (a burst), the interval doubles
// up to MaxInterval (1 s), so a burst of a second costs about six applies
// and no change waits longer than MaxInterval (spacing.go).
// A failed apply is retried with exponential backoff; a successful one is
// repeated every ResyncInterval to heal drift (someone flushed our rules).
// Nothing is applied before the first configuration arrives: the
// configuration source sets it only after its first full sync.
package reconcile
