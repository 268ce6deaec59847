package endpoints

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/controller/identifiers"
	"github.com/sllbrd/sllbrd/model"
)

const ns = "tenant-a"

var gw = model.Gateway{
	Namespace: ns, Name: "sllb-a",
	Networks: []model.Network{{Name: "macvlan-nad-1", Interface: "net1"}},
	Subnets:  []netip.Prefix{netip.MustParsePrefix("169.111.100.0/24"), netip.MustParsePrefix("fd00:111::/64")},
}

// newPod returns a Running, Ready pod of a sidecar (its Ready condition
// says when its network configuration is applied) with the network-status
// annotation status (none when empty).
func newPod(name, status string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
			Annotations:       map[string]string{kube.AnnotationTargetAgent: kube.TargetAgentSidecar}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.9",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if status != "" {
		p.Annotations[kube.AnnotationNetworkStatus] = status
	}
	return p
}

// status is a network-status annotation: the pod network, then name with ips.
func status(name string, ips ...string) string {
	q, _ := json.Marshal(ips)
	return fmt.Sprintf(`[{"name":"kindnet","interface":"eth0","ips":["10.244.0.9","169.111.100.99"],"mac":"aa:bb:cc:dd:ee:00","default":true,"dns":{}},`+
		`{"name":%q,"interface":"net1","ips":%s,"mac":"aa:bb:cc:dd:ee:01","dns":{}}]`, name, q)
}

func TestPodAddresses(t *testing.T) {
	for _, tc := range []struct {
		name, annotation string
		want             Addresses
		fault            Fault
		msg              string // part of the message
	}{
		{"Multus name with the namespace", status(ns+"/macvlan-nad-1", "169.111.100.11"),
			Addresses{V4: netip.MustParseAddr("169.111.100.11")}, "", ""},
		{"name as in the Gateway", status("macvlan-nad-1", "fd00:111::11"),
			Addresses{V6: netip.MustParseAddr("fd00:111::11")}, "", ""},
		{"dual-stack, lowest address of each family, prefix lengths tolerated",
			status(ns+"/macvlan-nad-1", "169.111.100.20", "fd00:111::20/64", "169.111.100.12/24", "fd00:111::13"),
			Addresses{V4: netip.MustParseAddr("169.111.100.12"), V6: netip.MustParseAddr("fd00:111::13")}, "", ""},
		{"the default network is never used, even inside the subnets", `[{"name":"macvlan-nad-1","ips":["169.111.100.5"],"default":true}]`,
			Addresses{}, FaultNoAddressOnNetwork, "no address in the Gateway's network-subnets"},
		{"another namespace's network of the same name", status("other/macvlan-nad-1", "169.111.100.11"),
			Addresses{}, FaultNoAddressOnNetwork, "[macvlan-nad-1]"},
		{"another network", status(ns+"/vlan-100", "169.111.100.11"),
			Addresses{}, FaultNoAddressOnNetwork, ""},
		{"outside the subnets", status(ns+"/macvlan-nad-1", "169.111.101.11", "fd00:112::1"),
			Addresses{}, FaultNoAddressOnNetwork, "169.111.100.0/24"},
		{"IPv4-mapped IPv6 is IPv4", status(ns+"/macvlan-nad-1", "::ffff:169.111.100.7"),
			Addresses{V4: netip.MustParseAddr("169.111.100.7")}, "", ""},
		{"no annotation", "", Addresses{}, FaultNoNetworkStatus, kube.AnnotationNetworkStatus},
		{"not JSON", `[{"name":`, Addresses{}, FaultInvalidNetworkStatus, "not a JSON list"},
		{"not a list", `{"name":"macvlan-nad-1"}`, Addresses{}, FaultInvalidNetworkStatus, "not a JSON list"},
		{"bad address and no good one", status(ns+"/macvlan-nad-1", "169.111.100.300"),
			Addresses{}, FaultInvalidNetworkStatus, `"169.111.100.300" is not an IP address`},
		{"a bad address next to a good one", status(ns+"/macvlan-nad-1", "bogus", "169.111.100.8"),
			Addresses{V4: netip.MustParseAddr("169.111.100.8")}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, fault, msg := PodAddresses(newPod("p", tc.annotation), gw)
			if got != tc.want || fault != tc.fault || !strings.Contains(msg, tc.msg) || (fault == "") != (msg == "") {
				t.Errorf("PodAddresses = %+v, %q, %q; want %+v, %q, containing %q", got, fault, msg, tc.want, tc.fault, tc.msg)
			}
		})
	}
}

func TestPodAddressesGatewayNetworkWithNamespace(t *testing.T) {
	g := gw
	g.Networks = []model.Network{{Name: "infra/macvlan-nad-1", Interface: "net1"}}
	if got, _, _ := PodAddresses(newPod("p", status("infra/macvlan-nad-1", "169.111.100.1")), g); !got.V4.IsValid() {
		t.Errorf("a namespaced Gateway network does not match the same Multus name")
	}
	if got, _, _ := PodAddresses(newPod("p", status(ns+"/macvlan-nad-1", "169.111.100.1")), g); got.Has() {
		t.Errorf("a namespaced Gateway network matched another namespace's network")
	}
}

func TestCandidates(t *testing.T) {
	ok := status(ns+"/macvlan-nad-1", "169.111.100.11")
	notReady := newPod("not-ready", ok)
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	deleting := newPod("deleting", ok)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	succeeded := newPod("succeeded", ok)
	succeeded.Status.Phase = corev1.PodSucceeded
	failed := newPod("failed", ok)
	failed.Status.Phase = corev1.PodFailed
	pendingNoStatus := newPod("pending", "")
	pendingNoStatus.Status.Phase = corev1.PodPending
	pendingWithStatus := newPod("starting", ok)
	pendingWithStatus.Status = corev1.PodStatus{Phase: corev1.PodPending}
	runningNoStatus := newPod("no-multus", "")
	malformed := newPod("malformed", "{")
	cands, skipped := Candidates([]*corev1.Pod{newPod("ready", ok), notReady, deleting, succeeded, failed,
		pendingNoStatus, pendingWithStatus, runningNoStatus, malformed}, gw)
	type conds struct{ ready, serving, terminating bool }
	want := map[string]conds{
		"ready": {true, true, false}, "not-ready": {false, false, false},
		"deleting": {false, true, true}, "starting": {false, false, false},
	}
	got := map[string]conds{}
	for _, c := range cands {
		got[c.Pod.Name] = conds{c.Ready, c.Serving, c.Terminating}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("candidates %v, want %v", got, want)
	}
	var faults []string
	for _, s := range skipped {
		faults = append(faults, s.Pod.Name+":"+string(s.Fault))
	}
	if want := []string{"no-multus:NoNetworkStatus", "malformed:InvalidNetworkStatus"}; !slices.Equal(faults, want) {
		t.Errorf("skipped %v, want %v", faults, want)
	}
}

// endpoint is an assigned endpoint of pod name with identifier id.
func endpoint(name string, id int, ready bool, ips ...string) Endpoint {
	p := newPod(name, status(ns+"/macvlan-nad-1", ips...))
	addrs, _, _ := PodAddresses(p, gw)
	return Endpoint{Candidate: Candidate{Pod: p, Addrs: addrs, Ready: ready, Serving: ready}, ID: id}
}

var svc = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "service-a", Namespace: ns, UID: "svc-uid"}}

// apply plays a plan onto the existing slices, as the API server would.
func apply(existing []*discoveryv1.EndpointSlice, p Plan) []*discoveryv1.EndpointSlice {
	byName := map[string]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		byName[s.Name] = s
	}
	for _, s := range append(p.Create, p.Update...) {
		byName[s.Name] = s
	}
	for _, s := range p.Delete {
		delete(byName, s.Name)
	}
	var out []*discoveryv1.EndpointSlice
	for _, s := range byName {
		out = append(out, s)
	}
	return out
}

func names(ss []*discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

func TestPlanSlicesDualStack(t *testing.T) {
	eps := []Endpoint{
		endpoint("b", 1, false, "169.111.100.12", "fd00:111::12"),
		endpoint("a", 0, true, "169.111.100.11", "fd00:111::11"),
		endpoint("v6only", 2, true, "fd00:111::13"),
	}
	p := PlanSlices(svc, eps, nil)
	if len(p.Update)+len(p.Delete) != 0 || !slices.Equal(names(p.Create), []string{"service-a-ipv4", "service-a-ipv6"}) {
		t.Fatalf("plan from nothing: create %v update %d delete %d", names(p.Create), len(p.Update), len(p.Delete))
	}
	for _, s := range p.Create {
		if s.Namespace != ns || s.Labels[kube.LabelServiceName] != "service-a" ||
			s.Labels[kube.LabelEndpointSliceManagedBy] != kube.EndpointSliceManager ||
			len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "svc-uid" || !*s.OwnerReferences[0].Controller {
			t.Errorf("slice %s metadata: %+v", s.Name, s.ObjectMeta)
		}
	}
	v4, v6 := p.Create[0], p.Create[1]
	if v4.AddressType != discoveryv1.AddressTypeIPv4 || v6.AddressType != discoveryv1.AddressTypeIPv6 {
		t.Fatalf("address types %s %s", v4.AddressType, v6.AddressType)
	}
	// The dataplane's format: JSON object IP -> identifier; one per pod.
	if got := v4.Annotations[kube.AnnotationEndpointIdentifiers]; got != `{"169.111.100.11":0,"169.111.100.12":1}` {
		t.Errorf("IPv4 identifiers %s", got)
	}
	if got := v6.Annotations[kube.AnnotationEndpointIdentifiers]; got != `{"fd00:111::11":0,"fd00:111::12":1,"fd00:111::13":2}` {
		t.Errorf("IPv6 identifiers %s", got)
	}
	e := v4.Endpoints[1]
	if e.Addresses[0] != "169.111.100.12" || *e.Conditions.Ready || *e.Conditions.Serving || *e.Conditions.Terminating ||
		e.TargetRef.Name != "b" || e.TargetRef.UID != "uid-b" || e.TargetRef.Namespace != ns {
		t.Errorf("endpoint b: %+v %+v", e, e.TargetRef)
	}
	if got := Claims(p.Create); len(got) != 5 {
		t.Errorf("claims recovered from the plan: %v", got)
	}
	slicesNow := apply(nil, p)
	// Unchanged input in another order: nothing to write.
	slices.Reverse(eps)
	if again := PlanSlices(svc, eps, slicesNow); !again.Empty() {
		t.Errorf("replanning the same endpoints writes: create %v update %v delete %v",
			names(again.Create), names(again.Update), names(again.Delete))
	}
	// Readiness of a: one update per family, nothing else.
	eps[slices.IndexFunc(eps, func(e Endpoint) bool { return e.Pod.Name == "a" })].Ready = false
	if p := PlanSlices(svc, eps, slicesNow); len(p.Create)+len(p.Delete) != 0 || !slices.Equal(names(p.Update), []string{"service-a-ipv4", "service-a-ipv6"}) {
		t.Errorf("readiness change: create %v update %v delete %v", names(p.Create), names(p.Update), names(p.Delete))
	}
	// Only the IPv6-only pod left: the IPv4 slice goes.
	p = PlanSlices(svc, eps[:1], slicesNow) // reversed: v6only first
	if !slices.Equal(names(p.Delete), []string{"service-a-ipv4"}) || !slices.Equal(names(p.Update), []string{"service-a-ipv6"}) {
		t.Errorf("IPv6-only: update %v delete %v", names(p.Update), names(p.Delete))
	}
	// No pods: every slice goes.
	if p := PlanSlices(svc, nil, slicesNow); !slices.Equal(names(p.Delete), []string{"service-a-ipv4", "service-a-ipv6"}) {
		t.Errorf("no endpoints: delete %v", names(p.Delete))
	}
}

func TestPlanSlicesKeepsForeignFields(t *testing.T) {
	p := PlanSlices(svc, []Endpoint{endpoint("a", 0, true, "169.111.100.11")}, nil)
	s := p.Create[0].DeepCopy()
	s.ResourceVersion = "7"
	s.Labels["team"] = "blue"
	if again := PlanSlices(svc, []Endpoint{endpoint("a", 0, true, "169.111.100.11")}, []*discoveryv1.EndpointSlice{s}); !again.Empty() {
		t.Errorf("a label added by someone else causes a write: %v", names(again.Update))
	}
	s.Annotations[kube.AnnotationEndpointIdentifiers] = `{"169.111.100.11":5}`
	again := PlanSlices(svc, []Endpoint{endpoint("a", 0, true, "169.111.100.11")}, []*discoveryv1.EndpointSlice{s})
	if len(again.Update) != 1 || again.Update[0].ResourceVersion != "7" || again.Update[0].Labels["team"] != "blue" ||
		again.Update[0].Annotations[kube.AnnotationEndpointIdentifiers] != `{"169.111.100.11":0}` {
		t.Errorf("an edited identifier is not restored on the same object: %+v", again.Update)
	}
}

func TestPlanSlicesOverOneSlice(t *testing.T) {
	var eps []Endpoint
	for i := range MaxEndpointsPerSlice + 30 {
		eps = append(eps, endpoint(fmt.Sprintf("p%03d", i), i, true, fmt.Sprintf("169.111.100.%d", i%250+1)))
		eps[i].Addrs.V4 = netip.AddrFrom4([4]byte{169, 111, byte(i >> 8), byte(i)})
	}
	p := PlanSlices(svc, eps, nil)
	if !slices.Equal(names(p.Create), []string{"service-a-ipv4", "service-a-ipv4-2"}) {
		t.Fatalf("create %v", names(p.Create))
	}
	if len(p.Create[0].Endpoints) != MaxEndpointsPerSlice || len(p.Create[1].Endpoints) != 30 {
		t.Fatalf("sizes %d %d", len(p.Create[0].Endpoints), len(p.Create[1].Endpoints))
	}
	now := apply(nil, p)
	// Ten pods of the first slice go: the others stay where they are, the
	// second slice is untouched.
	p = PlanSlices(svc, eps[10:], now)
	if len(p.Create)+len(p.Delete) != 0 || !slices.Equal(names(p.Update), []string{"service-a-ipv4"}) {
		t.Fatalf("scale down: create %v update %v delete %v", names(p.Create), names(p.Update), names(p.Delete))
	}
	now = apply(now, p)
	// New pods fill the first slice's room first.
	more := append(slices.Clone(eps[10:]), eps[:5]...)
	p = PlanSlices(svc, more, now)
	if len(p.Create) != 0 || !slices.Equal(names(p.Update), []string{"service-a-ipv4"}) {
		t.Fatalf("scale up: create %v update %v", names(p.Create), names(p.Update))
	}
	claims := Claims(apply(now, p))
	got := identifiers.Assign(kube.MaxMaxEndpoints, Identify(candidatesOf(more)), claims)
	for _, ep := range more {
		if got.IDs[string(ep.Pod.UID)] != ep.ID {
			t.Fatalf("pod %s: recovered identifier %d, wrote %d", ep.Pod.Name, got.IDs[string(ep.Pod.UID)], ep.ID)
		}
	}
}

func candidatesOf(eps []Endpoint) []Candidate {
	var out []Candidate
	for _, ep := range eps {
		out = append(out, ep.Candidate)
	}
	return out
}

func TestClaimsIgnoreWhatIsNotAPod(t *testing.T) {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Annotations: map[string]string{kube.AnnotationEndpointIdentifiers: `{"169.111.100.1":3,"169.111.100.2":4}`}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"169.111.100.1"}},
			{Addresses: []string{"169.111.100.2"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", UID: "u2"}},
			{Addresses: []string{"169.111.100.3"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", UID: "u3"}},
		},
	}
	if got := Claims([]*discoveryv1.EndpointSlice{s}); !slices.Equal(got, []identifiers.Claim{{UID: "u2", ID: 4}}) {
		t.Errorf("claims %v", got)
	}
	s.Annotations[kube.AnnotationEndpointIdentifiers] = "not json"
	if got := Claims([]*discoveryv1.EndpointSlice{s}); len(got) != 0 {
		t.Errorf("claims from a broken annotation: %v", got)
	}
}
