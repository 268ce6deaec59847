// Package apigate holds list and watch requests back while the API server
// does not answer.
//
// client-go's reflectors back off after each failed list or watch: 800 ms,
// doubling to 30 s with as much jitter again, reset only after two minutes
// without a failure. Every attempt during an API server outage is a
// failure, so after a restart of a few seconds an informer resumed up to a
// minute later, and its user missed every change meanwhile (an SLLBR Pod
// deleted stayed a next hop of the targets). A Gate wrapped around an
// informer's ListerWatcher turns the outage into one failure: after a
// failed request, the next waits until the API server answers its /readyz
// probe (polled every period), then goes through at once. kube/informer
// runs the informers that sllbrd's roles wrap in a gate, without
// client-go's backoff after a watch that ran.
//
// Contract: Wrap's ListerWatcher behaves as the wrapped one while requests
// succeed; after a failure, every request waits in Wait, which returns when
// a probe succeeds or the request's context ends (then with its error). One
// caller probes at a time; the others wait for its outcome. A Gate is safe
// for concurrent use and holds no goroutine of its own.
package apigate
