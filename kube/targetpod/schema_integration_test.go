package targetpod_test

import (
	"encoding/json"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/targetpod"
	"github.com/sllbrd/sllbrd/model/vip"
)

// TestIntegrationAgentAppliesTheSharedValidation shows that the check
// `sllbrd target` applies to its pod's annotation is targetpod.Validate, the
// one the controller writes by: a configuration whose only fault is a
// link-local VIP (the applier, targetnet, would take it) changes nothing
// in the pod's namespace, and the status says what vip.Check says.
func TestIntegrationAgentAppliesTheSharedValidation(t *testing.T) {
	e := newAgentEnv(t)
	e.start()
	d1 := desired(1, "169.111.100.1")
	e.annotate(kube.AnnotationTargetNetwork, &d1)
	e.status("generation 1 applied", func(s targetpod.Status, _ bool) bool { return s.ObservedGeneration == 1 && s.Ready })
	before, addrs := e.routes(), e.loAddresses()
	if !strings.Contains(addrs, "20.0.0.1/32") {
		t.Fatalf("generation 1's VIP is not on lo: %s", addrs)
	}

	const linkLocal = "169.254.10.1/32"
	bad := strings.Replace(desired(2, "169.111.100.1"), "20.0.0.1/32", linkLocal, 1)
	var d targetpod.Desired
	if err := json.Unmarshal([]byte(bad), &d); err != nil {
		t.Fatal(err)
	}
	if err := d.Net().Validate(); err != nil {
		t.Fatalf("the applier refuses the example itself (%v): it shows nothing", err)
	}
	e.annotate(kube.AnnotationTargetNetwork, &bad)
	want := vip.Check(netip.MustParsePrefix(linkLocal)).Error()
	s := e.status("the link-local VIP refused", func(s targetpod.Status, _ bool) bool {
		return !s.Ready && strings.Contains(strings.Join(s.Errors, "\n"), want)
	})
	if s.ObservedGeneration != 1 {
		t.Errorf("observed generation %d, want 1 (the last valid one)", s.ObservedGeneration)
	}
	if r, a := e.routes(), e.loAddresses(); r != before || a != addrs || strings.Contains(a, "169.254.10.1") {
		t.Errorf("the refused configuration changed the namespace:\nroutes %s\nlo %s", r, a)
	}
}

// loAddresses lists the addresses on the namespace's lo.
func (e *agentEnv) loAddresses() string {
	out, err := exec.Command("ip", "-n", e.ns, "-brief", "addr", "show", "dev", "lo").CombinedOutput()
	if err != nil {
		e.t.Fatalf("ip addr: %v: %s", err, out)
	}
	return string(out)
}
