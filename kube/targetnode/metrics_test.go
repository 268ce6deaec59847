package targetnode

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/targetnet"
)

type lastOutcome struct{ o targetnet.Outcome }

func (l *lastOutcome) ObserveApply(o targetnet.Outcome) { l.o = o }
func (l *lastOutcome) ObserveStatusWrite(error)         {}

// TestNodeMetricsSumThePods: each apply is observed with its own error and
// duration and with the last results of every pod summed per Gateway; a
// forgotten pod leaves the sum at the next apply.
func TestNodeMetricsSumThePods(t *testing.T) {
	inner := &lastOutcome{}
	m := newNodeMetrics(inner)
	gw := func(name string, vips int, hops ...string) targetnet.GatewayResult {
		g := targetnet.GatewayResult{Name: name}
		for i := range vips {
			g.VIPs = append(g.VIPs, netip.PrefixFrom(netip.AddrFrom4([4]byte{20, 0, 0, byte(i + 1)}), 32))
		}
		for _, h := range hops {
			g.NextHops = append(g.NextHops, netip.MustParseAddr(h))
		}
		return g
	}
	m.forPod("a").ObserveApply(targetnet.Outcome{Generation: 7, Took: time.Millisecond,
		Result: targetnet.Result{Gateways: []targetnet.GatewayResult{gw("sllb-a", 2, "169.111.100.1")}, Conflicts: []string{"x"}}})
	boom := errors.New("boom")
	m.forPod("b").ObserveApply(targetnet.Outcome{Generation: 3, Err: boom, Took: 2 * time.Millisecond,
		Result: targetnet.Result{Gateways: []targetnet.GatewayResult{gw("sllb-a", 1, "169.111.100.1", "fd00:111::1"), gw("sllb-b", 1)}}})
	o := inner.o
	if o.Err != boom || o.Took != 2*time.Millisecond || o.Generation != 0 || len(o.Result.Gateways) != 2 ||
		o.Result.Gateways[0].Name != "sllb-a" || len(o.Result.Gateways[0].VIPs) != 3 || len(o.Result.Gateways[0].NextHops) != 3 ||
		o.Result.Gateways[1].Name != "sllb-b" || len(o.Result.Conflicts) != 1 {
		t.Errorf("observed %+v", o)
	}
	m.forget("b")
	m.forPod("a").ObserveApply(targetnet.Outcome{Generation: 8,
		Result: targetnet.Result{Gateways: []targetnet.GatewayResult{gw("sllb-a", 2, "169.111.100.1")}}})
	if o := inner.o; o.Err != nil || len(o.Result.Gateways) != 1 || len(o.Result.Gateways[0].VIPs) != 2 || len(o.Result.Conflicts) != 0 {
		t.Errorf("after b went: %+v", o)
	}
}
