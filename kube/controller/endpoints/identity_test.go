package endpoints

import (
	"encoding/json"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/controller/identifiers"
)

// service plays the controller on one Service: every reconcile recovers
// the identifiers from the slices it wrote before, as the controller does.
type service struct {
	t      *testing.T
	slices []*discoveryv1.EndpointSlice
}

// reconcile computes and writes the slices of pods and returns pod name ->
// identifier as the slices list them, failing when an address is listed
// twice or the annotation and the endpoints disagree.
func (s *service) reconcile(pods ...*corev1.Pod) (map[string]int, identifiers.Assignment) {
	s.t.Helper()
	cands, _ := Candidates(pods, gw)
	got := identifiers.Assign(8, Identify(cands), Claims(s.slices))
	var eps []Endpoint
	for _, c := range cands {
		if id, ok := got.IDs[string(c.Pod.UID)]; ok {
			eps = append(eps, Endpoint{Candidate: c, ID: id})
		}
	}
	s.slices = apply(s.slices, PlanSlices(svc, eps, s.slices))
	out := map[string]int{}
	for _, sl := range s.slices {
		var ids map[string]int
		if err := json.Unmarshal([]byte(sl.Annotations[kube.AnnotationEndpointIdentifiers]), &ids); err != nil {
			s.t.Fatal(err)
		}
		if len(ids) != len(sl.Endpoints) {
			s.t.Fatalf("slice %s lists %d endpoints and %d identifiers: an address is listed twice", sl.Name, len(sl.Endpoints), len(ids))
		}
		for _, ep := range sl.Endpoints {
			name := ep.TargetRef.Name
			if prev, seen := out[name]; seen && prev != ids[ep.Addresses[0]] {
				s.t.Fatalf("pod %s has identifiers %d and %d", name, prev, ids[ep.Addresses[0]])
			}
			out[name] = ids[ep.Addresses[0]]
		}
	}
	return out, got
}

// podAt is a ready pod created age seconds after a fixed time, with ips
// on the Gateway's network.
func podAt(name string, age int, ips ...string) *corev1.Pod {
	p := newPod(name, status(ns+"/macvlan-nad-1", ips...))
	p.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, age, 0, time.UTC))
	return p
}

func terminatingPod(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)}
	return p
}

// TestOneAddressIsOneEndpoint replays rollouts of pods that keep their
// addresses (static IPAM: the replacement has the address of the pod it
// replaces): identifiers belong to pods, an address is listed once, and a
// replacement takes over exactly the identifier of the pod whose address
// it has.
func TestOneAddressIsOneEndpoint(t *testing.T) {
	s := &service{t: t}
	a := podAt("a", 0, "169.111.100.11", "fd00:111::11")
	b := podAt("b", 1, "169.111.100.12", "fd00:111::12")
	expect := func(what string, got, want map[string]int) {
		t.Helper()
		if !maps.Equal(got, want) {
			t.Fatalf("%s: identifiers %v, want %v", what, got, want)
		}
	}
	got, _ := s.reconcile(a, b)
	expect("start", got, map[string]int{"a": 0, "b": 1})

	// A surge pod with a's addresses while a runs: a keeps them and its
	// identifier, run after run; the newcomer waits, said why.
	a2 := podAt("a2", 10, "169.111.100.11", "fd00:111::11")
	for run := range 3 {
		got, assigned := s.reconcile(a, b, a2)
		expect("a2 beside a", got, map[string]int{"a": 0, "b": 1})
		if len(assigned.Duplicates) != 1 || assigned.Duplicates[0].Pod.Name != "a2" || assigned.Duplicates[0].Holder.Name != "a" {
			t.Fatalf("run %d: duplicates %+v, want a2 left out for a", run, assigned.Duplicates)
		}
	}
	// a terminates: a2 takes its address and its identifier.
	got, _ = s.reconcile(terminatingPod(a), b, a2)
	expect("a terminating", got, map[string]int{"a2": 0, "b": 1})

	// Both terminate; the replacements arrive in the other order: each
	// takes the identifier of the pod whose address it has, not the
	// lowest one handed over.
	rb := podAt("rb", 20, "169.111.100.12", "fd00:111::12")
	ra := podAt("ra", 21, "169.111.100.11", "fd00:111::11")
	got, _ = s.reconcile(terminatingPod(a2), terminatingPod(b), rb, ra)
	expect("replacements by address", got, map[string]int{"ra": 0, "rb": 1})
	got, _ = s.reconcile(rb, ra)
	expect("the old pods gone", got, map[string]int{"ra": 0, "rb": 1})
}
