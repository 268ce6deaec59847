// Package bench holds captured traffic mixes (testdata/*.pcap, raw IP link
// type, as nfqueue delivers packets) and benchmarks that run every packet
// through the whole decision: decode, classify, Maglev, fragments, ICMP.
//
// The pcaps are written by TestPcapsUpToDate from a fixed seed; run
// `go test ./bench -run TestPcapsUpToDate -update` after changing the
// generator. The configuration they are decided against is in config.go.
//
// `make bench` runs the benchmarks with -benchmem; every benchmark here
// reports 0 allocs/op and TestDecisionAllocatesNothing pins it.
package bench
