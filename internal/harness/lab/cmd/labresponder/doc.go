// Command labresponder is the lab's per-target server process, and the
// test application of the test node's pods: it binds UDP and TCP sockets
// on the given addresses (VIPs) and answers every datagram and connection
// with the target's name and the client's address:port (package
// responder).
//
// It prints "ready" on stdout once every socket is bound, and exits with
// status 0 on SIGTERM or SIGINT (also as PID 1 of a container). The VIPs
// need not be local yet: in a pod, `sllbrd target` adds them to lo after
// the application started. The name defaults to $POD_NAME, which a pod
// sets from the downward API (fieldRef metadata.name). Bad flags exit with
// status 2, failures to bind with 1.
//
//	labresponder -name t1 -addr 20.0.0.1,2001:db8::1 -udp 80,5000-5010 -tcp 80,5000-5010
package main
