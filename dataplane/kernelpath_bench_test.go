package dataplane

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/dataplane/fastpath"
	"github.com/sllbrd/sllbrd/dataplane/nft"
	"github.com/sllbrd/sllbrd/model"
)

// oneService is a Service of n endpoints with an IPv4 and an IPv6 address
// each, all ready but notReady (-1: none), and a route to it.
func oneService(n int, gen uint64, notReady int) *model.State {
	svc := model.Service{Name: "svc", MaxEndpoints: n, SCTPHashPorts: true}
	for id := range n {
		host := 10 + id // the LB is .1
		svc.Endpoints = append(svc.Endpoints,
			model.Endpoint{ID: id, Ready: id != notReady, Addr: netip.AddrFrom4([4]byte{169, 111, byte(100 + host>>8), byte(host)})},
			model.Endpoint{ID: id, Ready: id != notReady, Addr: netip.AddrFrom16([16]byte{0xfd, 0, 1, 0x11, 14: byte(host >> 8), 15: byte(host)})})
	}
	return &model.State{Generation: gen, Services: []model.Service{svc}, Routes: []model.Route{{Name: "default/r", Service: "svc", Priority: 1,
		Destinations: []netip.Prefix{netip.PrefixFrom(labVIP4, 32), netip.PrefixFrom(labVIP6, 128)},
		Protocols:    []model.Protocol{model.ProtoTCP, model.ProtoUDP}}}}
}

var benchSizes = []int{3, 32, 1000}

// BenchmarkKernelPathEndpointChange measures one endpoint change on the
// real kernel: one endpoint of N stops being ready, then is ready again,
// alternately; each Apply (build, routes, commit, and the kernel path's one
// nftables transaction rewriting the map entries that change, about 2M/N
// of the two families' M entries) is one iteration, committed as sllbrd
// does (commit=entries) and element by element through google/nftables
// (commit=nftables). It reports the map elements a change writes.
func BenchmarkKernelPathEndpointChange(b *testing.B) {
	commits := []struct {
		name string
		opts []nft.Option
	}{
		{"entries", nil}, // nft.NetlinkEntryConn, as sllbrd runs
		{"nftables", []nft.Option{nft.WithEntryConn(nil)}}, // google/nftables, element by element
	}
	for _, n := range benchSizes {
		for _, c := range commits {
			b.Run(fmt.Sprintf("N=%d/commit=%s", n, c.name), func(b *testing.B) {
				l := newKernelLab(b, c.opts...)
				l.apply(b, oneService(n, 1, -1))
				before := l.prog.kernelProgram().Table.Sets
				gen := uint64(1)
				changed := 0
				for i := 0; b.Loop(); i++ {
					gen++
					notReady := -1
					if i%2 == 0 {
						notReady = n / 2
					}
					l.apply(b, oneService(n, gen, notReady))
					if i == 0 {
						changed = mapChanges(before, l.prog.kernelProgram().Table.Sets)
					}
				}
				b.ReportMetric(float64(changed), "elements/change")
			})
		}
	}
}

// mapChanges counts the entries that differ between two compilations'
// entry maps (each is deleted and added again).
func mapChanges(a, b []nft.Set) int {
	n := 0
	for _, s := range a {
		i := slices.IndexFunc(b, func(t nft.Set) bool { return t.Name == s.Name })
		if i < 0 || s.Kind != nft.EntryMap {
			continue
		}
		for e := range s.Marks {
			if s.Marks[e] != b[i].Marks[e] {
				n++
			}
		}
	}
	return n
}

// BenchmarkKernelPathServiceMemory measures the kernel memory the kernel
// path's objects of one Service take (both families' maps of M entries,
// the chains and counters of N endpoints): the growth of the kernel's
// unreclaimable slab when they are programmed into an empty table (the
// table itself, VIP sets and base chains excluded). The machine is shared,
// and other processes' slab grows and shrinks meanwhile in both
// directions: it reports the median growth over the iterations (the
// smallest was an underestimate whenever another process freed slab).
func BenchmarkKernelPathServiceMemory(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			l := newKernelLab(b)
			e := NewEngine()
			plan, err := e.Build(oneService(n, 1, -1))
			if err != nil {
				b.Fatal(err)
			}
			full := fastpath.Compile(plan.kernelInput(l.prog.kernel.maxPayloadOffset))
			base := nft.Config{VIPs: plan.VIPs, Queues: nft.QueueRange{Count: 1}, Kernel: &nft.FastPath{}}
			with := base
			with.Kernel = full.Table
			var grew []int64
			for b.Loop() {
				if err := l.prog.rules.Program(base); err != nil {
					b.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond) // RCU frees what the last round deleted
				before := unreclaimableSlab(b)
				if err := l.prog.rules.Program(with); err != nil {
					b.Fatal(err)
				}
				grew = append(grew, unreclaimableSlab(b)-before)
			}
			slices.Sort(grew)
			median := grew[len(grew)/2]
			b.ReportMetric(float64(median), "kernel-bytes/service")
			b.ReportMetric(float64(median)/float64(2*plan.snap.services["svc"].ipv4.table.Size()), "kernel-bytes/entry")
		})
	}
}

// unreclaimableSlab reads SUnreclaim from /proc/meminfo, in bytes.
func unreclaimableSlab(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "SUnreclaim:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb * 1024
		}
	}
	tb.Fatal("no SUnreclaim in /proc/meminfo")
	return 0
}
