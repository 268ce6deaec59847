package dataplane

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func kernelProgrammer() (*Programmer, *fakeKernel) {
	p, k, _ := programmer()
	WithKernelPath(255)(p)
	return p, k
}

// TestApplyKernelPath: the kernel path's rules are programmed with the VIP
// sets, in the same transaction and at the same step (after the routes,
// after the commit); they use the committed plan's marks.
func TestApplyKernelPath(t *testing.T) {
	p, k := kernelProgrammer()
	if _, err := p.Apply(withNetwork(testState()), nil); err != nil {
		t.Fatal(err)
	}
	if want := []string{"routes-add@0", "rules@1", "routes-prune@1"}; !slices.Equal(k.calls, want) {
		t.Fatalf("calls %v, want %v", k.calls, want)
	}
	fp := k.cfg.Kernel
	if fp == nil || len(fp.Dispatch) == 0 || len(k.cfg.VIPs) != 2 {
		t.Fatalf("nft config %+v", k.cfg)
	}
	marks := map[uint32]bool{}
	for _, ep := range k.added {
		marks[ep.Mark] = true
	}
	prog := p.kernelProgram()
	for _, l := range prog.EndpointCounters {
		found := false
		for _, ep := range k.added {
			found = found || (ep.Via == l.Addr && marks[ep.Mark])
		}
		if !found {
			t.Errorf("endpoint counter %+v has no routed endpoint", l)
		}
	}
}

// TestApplyKernelPathKeepsRoutesWhenRulesFail: when the kernel path's
// rules cannot be programmed, its maps may still send packets with the
// marks of removed endpoints: their routes are not pruned and their marks
// not released until the rules are programmed.
func TestApplyKernelPathKeepsRoutesWhenRulesFail(t *testing.T) {
	p, k := kernelProgrammer()
	st := withNetwork(testState())
	if _, err := p.Apply(st, nil); err != nil {
		t.Fatal(err)
	}
	k.ruleErr = errors.New("boom")
	k.calls = nil
	st2 := withNetwork(testState())
	st2.Generation = 2
	st2.Services[0].Endpoints = st2.Services[0].Endpoints[:2] // slot 1, 2 and 3 go
	if _, err := p.Apply(st2, nil); !errors.Is(err, k.ruleErr) {
		t.Fatalf("Apply = %v, want the rules' error", err)
	}
	if slices.ContainsFunc(k.calls, func(c string) bool { return strings.HasPrefix(c, "routes-prune") }) {
		t.Errorf("routes pruned after the rules failed: %v", k.calls)
	}
	if g := p.engine.Generation(); g != 1 {
		t.Errorf("userspace decides with generation %d after the kernel's rules failed, want 1 as the kernel", g)
	}
	k.ruleErr = nil
	k.calls = nil
	if _, err := p.Apply(st2, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(k.calls, "routes-prune@2") {
		t.Errorf("routes not pruned once the rules are programmed: %v", k.calls)
	}
}

// TestApplyKernelPathCommitsAfterItsRules: once a plan is live, userspace
// takes the next one only after the kernel's rules did (in the fake's
// record, the generation userspace decides with at each call); the first
// plan is committed before its rules, which queue packets to it.
func TestApplyKernelPathCommitsAfterItsRules(t *testing.T) {
	p, k := kernelProgrammer()
	if _, err := p.Apply(withNetwork(testState()), nil); err != nil {
		t.Fatal(err)
	}
	if want := []string{"routes-add@0", "rules@1", "routes-prune@1"}; !slices.Equal(k.calls, want) {
		t.Fatalf("first Apply: calls %v, want %v", k.calls, want)
	}
	k.calls = nil
	st := withNetwork(testState())
	st.Generation = 2
	st.Services[0].Endpoints = st.Services[0].Endpoints[1:]
	if _, err := p.Apply(st, nil); err != nil {
		t.Fatal(err)
	}
	if want := []string{"routes-add@1", "rules@1", "routes-prune@2"}; !slices.Equal(k.calls, want) {
		t.Errorf("second Apply: calls %v, want %v", k.calls, want)
	}
	if g := p.engine.Generation(); g != 2 {
		t.Errorf("generation %d after the rules took plan 2", g)
	}
}

// TestAdoptKeepsAPreviousRunsMarks: the endpoint chains a previous run
// left name marks that a fresh start would assign differently; after
// Adopt the first plan uses them, and a slot the configuration no longer
// has does not keep its mark.
func TestAdoptKeepsAPreviousRunsMarks(t *testing.T) {
	p, k := kernelProgrammer()
	k.chains = map[string][]string{
		"e4-service-a-0": {"endpoint service-a 0 mark 0x10005 169.111.100.10 #1"},
		"e6-service-a-0": {"endpoint service-a 0 mark 0x10005 fd00:111::10 #2"},
		"e4-service-a-1": {"endpoint service-a 1 mark 0x10000 169.111.100.11 #3"},
		"e4-gone-7":      {"endpoint gone 7 mark 0x10002 169.111.100.99 #4"},
		"e4-service-a-9": {"endpoint service-a 9 mark 0x20000 169.111.100.19 #5"}, // outside the marks
	}
	if n, err := p.Adopt(); err != nil || n != 3 {
		t.Fatalf("Adopt = %d, %v; want 3 marks", n, err)
	}
	if _, err := p.Apply(withNetwork(testState()), nil); err != nil {
		t.Fatal(err)
	}
	got := map[int]uint32{}
	for key, m := range p.engine.marks.byKey {
		if key.service == "service-a" {
			got[key.id] = m
		}
	}
	if got[0] != 0x10005 || got[1] != 0x10000 {
		t.Errorf("marks after adoption %v: want slot 0 0x10005, slot 1 0x10000", got)
	}
	for key := range p.engine.marks.held {
		if key.service == "gone" {
			t.Errorf("the mark of a slot gone from the configuration is still held after the first Apply")
		}
	}
	if n, _ := NewProgrammer(NewEngine(), k, nil, p.queues, false, ReturnTable).Adopt(); n != 0 {
		t.Errorf("without the kernel path Adopt adopted %d marks", n)
	}
}
