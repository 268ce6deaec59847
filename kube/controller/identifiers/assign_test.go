package identifiers

import (
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// pod returns a pod named name created age seconds after t0.
func pod(name string, age int) Pod {
	return Pod{UID: "uid-" + name, Name: name, Created: t0.Add(time.Duration(age) * time.Second)}
}

func terminating(p Pod) Pod {
	p.Terminating = true
	return p
}

// at gives p addresses.
func at(p Pod, addrs ...string) Pod {
	p.Addresses = addrs
	return p
}

// dups lists the duplicates as "pod<-holder".
func dups(a Assignment) []string {
	var out []string
	for _, d := range a.Duplicates {
		out = append(out, d.Pod.Name+"<-"+d.Holder.Name)
	}
	return out
}

func ids(a Assignment) map[string]int {
	out := map[string]int{}
	for uid, id := range a.IDs {
		out[uid[len("uid-"):]] = id
	}
	return out
}

func names(ps []Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestAssign(t *testing.T) {
	for _, tc := range []struct {
		name       string
		max        int
		pods       []Pod
		claims     []Claim
		want       map[string]int
		overLimit  []string
		duplicates []string
	}{
		{
			name: "new pods get the lowest identifiers, oldest first",
			max:  4,
			pods: []Pod{pod("c", 3), pod("a", 1), pod("b", 2)},
			want: map[string]int{"a": 0, "b": 1, "c": 2},
		},
		{
			name: "same creation time: ordered by name",
			max:  4,
			pods: []Pod{pod("zeta", 1), pod("alpha", 1), pod("mid", 1)},
			want: map[string]int{"alpha": 0, "mid": 1, "zeta": 2},
		},
		{
			name:   "claims are kept; new pods fill the holes from the lowest",
			max:    8,
			pods:   []Pod{pod("a", 1), pod("b", 2), pod("new1", 5), pod("new2", 6)},
			claims: []Claim{{"uid-a", 3}, {"uid-b", 0}, {"uid-gone", 1}},
			want:   map[string]int{"a": 3, "b": 0, "new1": 1, "new2": 2},
		},
		{
			name:   "a younger pod does not take an older pod's identifier, whatever it claims",
			max:    4,
			pods:   []Pod{pod("old", 1), pod("young", 2)},
			claims: []Claim{{"uid-young", 0}, {"uid-old", 0}},
			want:   map[string]int{"old": 0, "young": 1},
		},
		{
			name:   "several claims of one pod: the lowest free one",
			max:    4,
			pods:   []Pod{pod("a", 1), pod("b", 2)},
			claims: []Claim{{"uid-b", 2}, {"uid-b", 1}, {"uid-a", 1}},
			want:   map[string]int{"a": 1, "b": 2},
		},
		{
			name:   "claims outside 0..max-1 are given up (max lowered)",
			max:    2,
			pods:   []Pod{pod("a", 1), pod("b", 2), pod("c", 3)},
			claims: []Claim{{"uid-a", 5}, {"uid-b", 1}, {"uid-c", -1}},
			want:   map[string]int{"a": 0, "b": 1},
			// c is the youngest without a valid claim.
			overLimit: []string{"c"},
		},
		{
			name:      "past the limit: the youngest are left out, oldest first",
			max:       2,
			pods:      []Pod{pod("d", 4), pod("a", 1), pod("c", 3), pod("b", 2)},
			want:      map[string]int{"a": 0, "b": 1},
			overLimit: []string{"c", "d"},
		},
		{
			name:      "a freed identifier goes to the oldest waiting pod",
			max:       2,
			pods:      []Pod{pod("b", 2), pod("c", 3), pod("d", 4)}, // a is gone
			claims:    []Claim{{"uid-a", 0}, {"uid-b", 1}},
			want:      map[string]int{"b": 1, "c": 0},
			overLimit: []string{"d"},
		},
		{
			name:   "a terminating pod keeps its identifier while no new pod needs one",
			max:    8,
			pods:   []Pod{pod("a", 1), terminating(pod("b", 2)), pod("c", 3)},
			claims: []Claim{{"uid-a", 0}, {"uid-b", 1}, {"uid-c", 2}},
			want:   map[string]int{"a": 0, "b": 1, "c": 2},
		},
		{
			name:   "a new pod takes over a terminating pod's identifier before a free one",
			max:    8,
			pods:   []Pod{pod("a", 1), terminating(pod("b", 2)), pod("c", 3), pod("b2", 9)},
			claims: []Claim{{"uid-a", 0}, {"uid-b", 1}, {"uid-c", 2}},
			want:   map[string]int{"a": 0, "b2": 1, "c": 2},
		},
		{
			name: "several: the oldest new pod takes the lowest, then free ones",
			max:  8,
			pods: []Pod{terminating(pod("a", 1)), terminating(pod("b", 2)), pod("c", 3),
				pod("n2", 11), pod("n1", 10), pod("n3", 12)},
			claims: []Claim{{"uid-a", 4}, {"uid-b", 0}, {"uid-c", 1}},
			want:   map[string]int{"n1": 0, "c": 1, "n2": 4, "n3": 2},
		},
		{
			name:   "at the limit: the new pod takes the terminating pod's identifier instead of waiting",
			max:    2,
			pods:   []Pod{pod("a", 1), terminating(pod("b", 2)), pod("b2", 9)},
			claims: []Claim{{"uid-a", 0}, {"uid-b", 1}},
			want:   map[string]int{"a": 0, "b2": 1},
		},
		{
			name:   "a terminating pod without a claim gets none, and is not over the limit",
			max:    2,
			pods:   []Pod{pod("a", 1), terminating(pod("t", 2))},
			claims: []Claim{{"uid-a", 0}},
			want:   map[string]int{"a": 0},
		},
		{
			name: "no pods",
			max:  32,
			want: map[string]int{},
		},
		{
			name:       "one address, two pods: the pod listed with it keeps it, the newcomer is left out",
			max:        8,
			pods:       []Pod{at(pod("a", 1), "10.0.0.1"), at(pod("b", 2), "10.0.0.2"), at(pod("a2", 3), "10.0.0.1")},
			claims:     []Claim{{"uid-a", 0}, {"uid-b", 1}},
			want:       map[string]int{"a": 0, "b": 1},
			duplicates: []string{"a2<-a"},
		},
		{
			name:       "one address claimed twice (slices of an older release): the older pod keeps it",
			max:        8,
			pods:       []Pod{at(pod("young", 2), "10.0.0.1"), at(pod("old", 1), "10.0.0.1")},
			claims:     []Claim{{"uid-young", 3}, {"uid-old", 3}},
			want:       map[string]int{"old": 3},
			duplicates: []string{"young<-old"},
		},
		{
			name:       "no claims: the older pod gets the address",
			max:        8,
			pods:       []Pod{at(pod("young", 2), "10.0.0.1"), at(pod("old", 1), "10.0.0.1")},
			want:       map[string]int{"old": 0},
			duplicates: []string{"young<-old"},
		},
		{
			name:       "a terminating pod's address goes to the new pod, with its identifier",
			max:        8,
			pods:       []Pod{at(pod("a", 1), "10.0.0.1"), at(terminating(pod("b", 2)), "10.0.0.2"), at(pod("b2", 3), "10.0.0.2")},
			claims:     []Claim{{"uid-a", 0}, {"uid-b", 5}},
			want:       map[string]int{"a": 0, "b2": 5},
			duplicates: []string{"b<-b2"},
		},
		{
			name: "replacements take the identifiers of the pods whose addresses they have, whatever their age",
			max:  8,
			pods: []Pod{at(terminating(pod("a", 1)), "10.0.0.1"), at(terminating(pod("b", 2)), "10.0.0.2"),
				at(pod("rb", 3), "10.0.0.2"), at(pod("ra", 4), "10.0.0.1"), at(pod("new", 5), "10.0.0.9")},
			claims:     []Claim{{"uid-a", 0}, {"uid-b", 1}},
			want:       map[string]int{"ra": 0, "rb": 1, "new": 2},
			duplicates: []string{"a<-ra", "b<-rb"},
		},
		{
			name: "dual-stack: one shared address is enough to be left out",
			max:  8,
			pods: []Pod{at(pod("a", 1), "10.0.0.1", "fd00::1"), at(pod("b", 2), "10.0.0.2", "fd00::1"),
				at(pod("c", 3), "10.0.0.3", "fd00::3")},
			claims:     []Claim{{"uid-a", 0}},
			want:       map[string]int{"a": 0, "c": 1},
			duplicates: []string{"b<-a"},
		},
		{
			name:       "two terminating pods with one address: the one listed keeps it until a new pod needs it",
			max:        8,
			pods:       []Pod{at(terminating(pod("a", 1)), "10.0.0.1"), at(terminating(pod("b", 2)), "10.0.0.1")},
			claims:     []Claim{{"uid-b", 4}},
			want:       map[string]int{"b": 4},
			duplicates: []string{"a<-b"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.pods)
			got := Assign(tc.max, tc.pods, tc.claims)
			if !maps.Equal(ids(got), tc.want) {
				t.Errorf("IDs = %v, want %v", ids(got), tc.want)
			}
			if !slices.Equal(names(got.OverLimit), tc.overLimit) {
				t.Errorf("OverLimit = %v, want %v", names(got.OverLimit), tc.overLimit)
			}
			if !slices.Equal(dups(got), tc.duplicates) {
				t.Errorf("Duplicates = %v, want %v", dups(got), tc.duplicates)
			}
			if !reflect.DeepEqual(in, tc.pods) {
				t.Errorf("Assign modified its input")
			}
		})
	}
}

// TestAssignIsStableOverAPodsLife replays a Service's history: each step
// feeds the previous assignment back as claims (as the controller recovers
// it from the slices it wrote); no pod ever changes identifier while it
// stays (a terminating one may only lose it, to a new pod), and every
// identifier is unique and below max.
func TestAssignIsStableOverAPodsLife(t *testing.T) {
	const max = 4
	live := []Pod{}
	var claims []Claim
	seen := map[string]int{}
	step := func(label string) {
		t.Helper()
		got := Assign(max, live, claims)
		used := map[int]string{}
		claims = nil
		for uid, id := range got.IDs {
			if id < 0 || id >= max {
				t.Fatalf("%s: %s got identifier %d outside 0..%d", label, uid, id, max-1)
			}
			if other, dup := used[id]; dup {
				t.Fatalf("%s: identifier %d given to %s and %s", label, id, uid, other)
			}
			used[id] = uid
			if was, ok := seen[uid]; ok && was != id {
				t.Fatalf("%s: %s moved from identifier %d to %d", label, uid, was, id)
			}
			seen[uid] = id
			claims = append(claims, Claim{uid, id})
		}
		leaving := 0
		for _, p := range live {
			if _, ok := got.IDs[p.UID]; !ok && p.Terminating {
				leaving++
				delete(seen, p.UID) // it lost its identifier; it never gets one again
			}
		}
		if len(got.IDs)+len(got.OverLimit)+leaving != len(live) {
			t.Fatalf("%s: %d assigned + %d over the limit + %d terminating without != %d pods",
				label, len(got.IDs), len(got.OverLimit), leaving, len(live))
		}
	}
	terminate := func(name string) {
		for i := range live {
			if live[i].Name == name {
				live[i].Terminating = true
			}
		}
	}
	remove := func(name string) {
		live = slices.DeleteFunc(live, func(p Pod) bool { return p.Name == name })
		delete(seen, "uid-"+name)
	}
	for i, n := range []string{"a", "b", "c"} {
		live = append(live, pod(n, i))
		step("add " + n)
	}
	live = append(live, pod("d", 10), pod("e", 11), pod("f", 12))
	step("scale past the limit")
	remove("b")
	step("b deleted")
	// a0 b1 c2 d3 were given; e and f waited; e, the older, takes b's 1.
	if id, ok := seen["uid-e"]; !ok || id != 1 {
		t.Fatalf("e did not get b's identifier 1: %v", seen)
	}
	if _, ok := seen["uid-f"]; ok {
		t.Fatalf("f got an identifier before e: %v", seen)
	}
	remove("a")
	step("a deleted")
	live = append(live, pod("a", 20)) // a new pod with an old name
	step("a re-created")
	remove("c")
	remove("d")
	step("scale back")
	terminate("e")
	step("e terminating")
	if seen["uid-e"] != 1 {
		t.Fatalf("e lost its identifier before a new pod needed it: %v", seen)
	}
	live = append(live, pod("e2", 30)) // its ReplicaSet's replacement
	step("e's replacement")
	if id, ok := seen["uid-e2"]; !ok || id != 1 {
		t.Fatalf("e2 did not take over terminating e's identifier 1: %v", seen)
	}
	if _, ok := seen["uid-e"]; ok {
		t.Fatalf("terminating e kept an identifier: %v", seen)
	}
	remove("e")
	step("e gone")
}
