// Command labresponder is the lab's per-target server process: it binds UDP
// and TCP sockets on the given addresses (VIPs) and answers every datagram
// and connection with the target's name and the client's address:port
// (package responder). It prints "ready" on stdout once every socket is
// bound, and exits on SIGTERM or SIGINT.
//
//	labresponder -name t1 -addr 20.0.0.1,2001:db8::1 -udp 80,5000-5010 -tcp 80,5000-5010
package main
