// Package testpkt builds raw IP packets (starting at the IP header, as
// nfqueue delivers them) for tests, benchmarks, fuzz seeds and the lab's
// traffic generators. It uses gopacket and is never imported by production
// code paths that carry packets.
package testpkt
