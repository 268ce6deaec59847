package bpfpath

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// TestEmbeddedObject checks, without a kernel, that the committed object
// holds what Load and Configure rely on: a tc and an XDP program, the two outer maps
// with their inner maps' templates (a one-element route set; tables of
// their own size), and the flow seed as a constant the loader sets (a zero
// seed would be nftables' "random", and no userspace path's hash).
func TestEmbeddedObject(t *testing.T) {
	spec, err := loadIngress()
	if err != nil {
		t.Fatal(err)
	}
	prog := spec.Programs[ingressProgSllbrdIngress]
	if prog == nil || prog.Type != ebpf.SchedCLS || prog.SectionName != "tc" {
		t.Fatalf("program %s: %+v, want a sched_cls program in section tc", ingressProgSllbrdIngress, prog)
	}
	if prog.License != "Apache-2.0" {
		t.Errorf("license %q, want the repository's Apache-2.0 (doc.go)", prog.License)
	}
	if xdp := spec.Programs[ingressProgSllbrdXdp]; xdp == nil || xdp.Type != ebpf.XDP || xdp.SectionName != "xdp" || xdp.License != "Apache-2.0" {
		t.Errorf("program %s: %+v, want an Apache-2.0 XDP program in section xdp (not xdp.frags: it takes linear frames only)", ingressProgSllbrdXdp, xdp)
	}
	routes, tables := spec.Maps[ingressMapVipRoutes], spec.Maps[ingressMapMaglevTables]
	if routes == nil || routes.Type != ebpf.HashOfMaps || routes.Flags != unix.BPF_F_NO_PREALLOC || routes.InnerMap == nil ||
		routes.InnerMap.Type != ebpf.Array || routes.InnerMap.MaxEntries != 1 ||
		routes.InnerMap.ValueSize != uint32(unsafe.Sizeof(ingressRouteSet{})) {
		t.Errorf("map %s: %+v (inner %+v), want a hash of maps, not preallocated, of one-element route set arrays", ingressMapVipRoutes, routes, routes.InnerMap)
	}
	if tables == nil || tables.Type != ebpf.ArrayOfMaps || tables.InnerMap == nil || tables.InnerMap.Type != ebpf.Array ||
		tables.InnerMap.Flags != unix.BPF_F_INNER_MAP || tables.InnerMap.ValueSize != uint32(unsafe.Sizeof(ingressTableEntry{})) {
		t.Errorf("map %s: %+v (inner %+v), want an array of maps of arrays of table entries, each of its own size", ingressMapMaglevTables, tables, tables.InnerMap)
	}
	for name, want := range map[string]struct {
		typ   ebpf.MapType
		flags uint32
		value uintptr
	}{
		ingressMapRouteCounters:    {ebpf.PerCPUArray, 0, unsafe.Sizeof(ingressCount{})},
		ingressMapEndpointCounters: {ebpf.PerCPUHash, unix.BPF_F_NO_PREALLOC, unsafe.Sizeof(ingressCount{})},
		ingressMapActionCounters:   {ebpf.PerCPUArray, 0, unsafe.Sizeof(ingressCount{})},
		ingressMapNextHops:         {ebpf.Hash, unix.BPF_F_NO_PREALLOC, unsafe.Sizeof(ingressNextHop{})},
		ingressMapXdpIfaces:        {ebpf.Hash, 0, unsafe.Sizeof(ingressXdpIface{})},
	} {
		m := spec.Maps[name]
		if m == nil || m.Type != want.typ || m.Flags != want.flags || m.ValueSize != uint32(want.value) {
			t.Errorf("map %s: %+v, want type %v, flags %#x, values of %d bytes", name, m, want.typ, want.flags, want.value)
		}
	}
	if m := spec.Maps[ingressMapActionCounters]; m == nil || m.MaxEntries != uint32(numActions) {
		t.Errorf("map %s: %+v, want %d entries, one per action", ingressMapActionCounters, m, numActions)
	}
	seed := spec.Variables[ingressVarFlowSeed]
	if seed == nil || !seed.Constant() || seed.Size() != 4 {
		t.Fatalf("variable %s: %v, want a 4-byte constant", ingressVarFlowSeed, seed)
	}
	var v uint32
	if err := seed.Get(&v); err != nil || v != 0 {
		t.Errorf("flow_seed in the object: %#x, %v; want 0 (the loader sets maglev.FlowSeed)", v, err)
	}
}

// TestStatusNames: every status has its own name.
func TestStatusNames(t *testing.T) {
	seen := map[string]bool{}
	for s := StatusDecided; s <= StatusPuntLimit; s++ {
		n := s.String()
		if _, ok := statusNames[s]; !ok || seen[n] {
			t.Errorf("status %d: name %q missing or repeated", s, n)
		}
		seen[n] = true
	}
	if got := Status(0).String(); got != "status-0" {
		t.Errorf("Status(0) = %q", got)
	}
}

// TestActionNames: every action has its own name.
func TestActionNames(t *testing.T) {
	seen := map[string]bool{}
	for a := range Action(numActions) {
		if n := a.String(); n == "" || seen[n] || strings.HasPrefix(n, "action-") {
			t.Errorf("action %d: name %q missing or repeated", a, n)
		} else {
			seen[n] = true
		}
	}
	if got := Action(numActions).String(); got != fmt.Sprintf("action-%d", numActions) {
		t.Errorf("Action(%d) = %q", numActions, got)
	}
}

// TestSkbContextLayout: skbContext's fields sit at struct __sk_buff's
// offsets (include/uapi/linux/bpf.h), as bpf/kernel.h's assertions pin
// them on the C side.
func TestSkbContextLayout(t *testing.T) {
	var c skbContext
	for name, got := range map[string][2]uintptr{
		"mark":            {unsafe.Offsetof(c.Mark), 8},
		"ingress_ifindex": {unsafe.Offsetof(c.IngressIfindex), 36},
		"cb":              {unsafe.Offsetof(c.CB), 48},
		"gso_segs":        {unsafe.Offsetof(c.GSOSegs), 164},
		"gso_size":        {unsafe.Offsetof(c.GSOSize), 176},
	} {
		if got[0] != got[1] {
			t.Errorf("%s at offset %d, want %d", name, got[0], got[1])
		}
	}
	if n := unsafe.Sizeof(c); n < 192 {
		t.Errorf("skbContext is %d bytes, shorter than the kernel's struct (192 in 6.18)", n)
	}
}
