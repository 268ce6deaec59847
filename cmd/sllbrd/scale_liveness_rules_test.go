package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/admin"
	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// scaleShowLimit is how long `sllbrd show services` and `show routes` may
// take at 1,000 dual-stack endpoints: well under the admin client's 10 s
// timeout, which one read of the kernel's counters per endpoint address
// exceeded.
const scaleShowLimit = 3 * time.Second

// checkScaleShow: show services lists every endpoint of service-a with
// both addresses, and show services and show routes answer within
// scaleShowLimit.
func checkScaleShow(t *testing.T, inst *e2e.Instance, n int) {
	t.Helper()
	var svcs admin.Services
	started := time.Now()
	sllbrdJSON(t, inst.AdminSocket, &svcs, "show", "services")
	took := time.Since(started)
	var routes admin.Routes
	started = time.Now()
	sllbrdJSON(t, inst.AdminSocket, &routes, "show", "routes")
	tookRoutes := time.Since(started)
	t.Logf("show services: %v, show routes: %v", took.Round(time.Millisecond), tookRoutes.Round(time.Millisecond))
	if took > scaleShowLimit || tookRoutes > scaleShowLimit {
		t.Errorf("show services took %v, show routes %v, want each within %v", took, tookRoutes, scaleShowLimit)
	}
	addresses := 0
	for _, svc := range svcs.Services {
		for _, ep := range svc.Endpoints {
			if svc.Name == "service-a" && ep.IPv4 != nil && ep.IPv6 != nil {
				addresses += 2
			}
		}
	}
	if addresses != 2*n || len(routes.Routes) == 0 {
		t.Errorf("show services: %d addresses of service-a, want %d; show routes: %d routes", addresses, 2*n, len(routes.Routes))
	}
}

// skipRule is the skip rule of sllbrd's policy routing (dataplane/route),
// as ip takes it.
var skipRule = []string{"pref", "9999", "not", "fwmark", "0x10000/0xffff0000", "goto", "10002"}

// skipRules reports how many of the two skip rules (one per family) the
// LB's namespace holds.
func skipRules(t *testing.T, l *lab.Lab) int {
	t.Helper()
	n := 0
	for _, fam := range []string{"-4", "-6"} {
		out := exec1(t, l, lab.LBName(1), "ip", fam, "rule", "list", "pref", "9999")
		n += strings.Count(out, "not from all fwmark 0x10000/0xffff0000 goto 10002")
	}
	return n
}

// measureWithoutSkipRules measures sllbrd at rest as measureSllbrdRest
// does, with the skip rules deleted by hand (the rule walk of every
// unmarked packet as before they existed), then puts them back. sllbrd
// restores them itself at its next apply (a resync every 30 s): a window
// at whose end they were back is measured again, up to three times.
func measureWithoutSkipRules(t *testing.T, l *lab.Lab, inst *e2e.Instance, window time.Duration) sllbrdRest {
	t.Helper()
	if n := skipRules(t, l); n != 2 {
		t.Fatalf("%d skip rules in the SLLBR's namespace, want 2 (one per family)", n)
	}
	defer func() {
		for _, fam := range []string{"-4", "-6"} {
			args := append([]string{"ip", fam, "rule", "add"}, skipRule...)
			if out, err := l.Exec(context.Background(), lab.LBName(1), args...); err != nil && !strings.Contains(out, "File exists") {
				t.Errorf("put the skip rule back: %v: %s", err, out)
			}
		}
	}()
	for range 3 {
		for _, fam := range []string{"-4", "-6"} {
			exec1(t, l, lab.LBName(1), append([]string{"ip", fam, "rule", "del"}, skipRule...)...)
		}
		r := measureSllbrdRest(t, inst, window)
		if skipRules(t, l) == 0 {
			return r
		}
		t.Logf("sllbrd put the skip rules back during the window: measuring again")
	}
	t.Fatal("sllbrd put the skip rules back during three windows")
	return sllbrdRest{}
}
