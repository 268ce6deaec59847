package bpfpath

import (
	"testing"

	"github.com/cilium/ebpf"
)

// TestEmbeddedObject checks, without a kernel, that the committed object
// holds what Load relies on: one tc program, the two maps, and the flow
// seed as a constant the loader sets (a zero seed would be nftables'
// "random", and no userspace path's hash).
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
	for name, want := range map[string]uint32{ingressMapConfig: 1, ingressMapMaglevTable: 16381} {
		m := spec.Maps[name]
		if m == nil || m.Type != ebpf.Array || m.MaxEntries != want {
			t.Errorf("map %s: %+v, want an array of %d", name, m, want)
		}
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
	for s := StatusDecided; s <= StatusPuntNonlinear; s++ {
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
