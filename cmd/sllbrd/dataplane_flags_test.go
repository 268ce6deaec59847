package main

import (
	"strings"
	"testing"
)

func TestDataplaneFlags(t *testing.T) {
	c, err := parseFlags([]string{"--gateway", "g"})
	if err != nil || c.dataplane != dataplaneKernel || c.onExit != onExitRemove {
		t.Fatalf("defaults: %+v, %v; want --dataplane %s --on-exit %s", c, err, dataplaneKernel, onExitRemove)
	}
	c, err = parseFlags([]string{"--gateway", "g", "--dataplane", "nfqueue", "--on-exit", "keep"})
	if err != nil || c.dataplane != dataplaneNFQueue || c.onExit != onExitKeep {
		t.Fatalf("nfqueue, keep: %+v, %v", c, err)
	}
	for _, args := range [][]string{{"--dataplane", "ebpf"}, {"--on-exit", "linger"}} {
		_, err := parseFlags(append([]string{"--gateway", "g"}, args...))
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: err %v, want one naming %s", args, err, args[0])
		}
	}
}
