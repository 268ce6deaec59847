package controller_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sllbrd/sllbrd/kube"
)

// sliceHistory is every version of the namespace's EndpointSlices, in the
// order the API server wrote them: a watch from before the test changes
// anything, resumed from the last version when the server ends it. A
// version a poll would miss (a transient flip written and undone between
// two reads) is in it.
type sliceHistory struct {
	mu       sync.Mutex
	versions []sliceEvent
	err      error
	stop     func()
}

type sliceEvent struct {
	typ   watch.EventType
	slice *discoveryv1.EndpointSlice
}

// recordSlices starts recording; it stops when the test ends or at
// history.events.
func (e *env) recordSlices() *sliceHistory {
	e.t.Helper()
	api := e.kube.DiscoveryV1().EndpointSlices(e.ns)
	list, err := api.List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatalf("list EndpointSlices: %v", err)
	}
	h := &sliceHistory{}
	for i := range list.Items {
		h.versions = append(h.versions, sliceEvent{watch.Added, &list.Items[i]})
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	var once sync.Once
	h.stop = func() {
		once.Do(func() { close(done) })
		<-finished
	}
	e.t.Cleanup(h.stop)
	go func() {
		defer close(finished)
		rv := list.ResourceVersion
		for {
			timeout := int64(600)
			w, err := api.Watch(e.ctx, metav1.ListOptions{ResourceVersion: rv, TimeoutSeconds: &timeout})
			if err != nil {
				h.fail(fmt.Errorf("watch EndpointSlices from %s: %w", rv, err))
				return
			}
			rv = h.follow(w, rv, done)
			w.Stop()
			select {
			case <-done:
				return
			default:
			}
			if rv == "" {
				return
			}
		}
	}()
	return h
}

// follow records the watch's events until it ends or done; it returns the
// version to resume from, "" when the history is broken.
func (h *sliceHistory) follow(w watch.Interface, rv string, done chan struct{}) string {
	for {
		select {
		case <-done:
			return rv
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv
			}
			if ev.Type == watch.Error {
				h.fail(fmt.Errorf("watch EndpointSlices: %w", apierrors.FromObject(ev.Object)))
				return ""
			}
			s, ok := ev.Object.(*discoveryv1.EndpointSlice)
			if !ok {
				continue
			}
			h.mu.Lock()
			h.versions = append(h.versions, sliceEvent{ev.Type, s})
			h.mu.Unlock()
			rv = s.ResourceVersion
		}
	}
}

func (h *sliceHistory) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = err
	}
}

// events stops recording (after a short wait for the last writes to
// arrive) and returns what was recorded.
func (h *sliceHistory) events(t *testing.T) []sliceEvent {
	t.Helper()
	time.Sleep(200 * time.Millisecond)
	h.stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		t.Fatalf("the slice history is incomplete: %v", h.err)
	}
	return h.versions
}

// listing is one pod's entry in one family's slices.
type listing struct {
	name string
	id   int
}

// checkNoFlip fails unless, in every recorded version of the Service's
// slices, each address is listed once, each pod has one identifier for
// as long as it is listed, a pod that left a family's slices never comes
// back to them, and each heir (replacement pod name -> the pod it
// replaces) is listed first with its predecessor's identifier. It returns
// how many versions of the Service's slices it checked.
func checkNoFlip(t *testing.T, history []sliceEvent, service string, heirs map[string]string) int {
	t.Helper()
	current := map[string]map[string]listing{} // slice name -> pod UID -> listing
	families := map[string]discoveryv1.AddressType{}
	first := map[string]listing{}                         // pod UID -> first listing
	gone := map[discoveryv1.AddressType]map[string]bool{} // family -> pods that left it
	listed := map[discoveryv1.AddressType]map[string]bool{}
	byName := map[string]int{} // pod name -> first identifier
	checked := 0
	for i, ev := range history {
		s := ev.slice
		if s.Labels[kube.LabelServiceName] != service {
			continue
		}
		checked++
		where := fmt.Sprintf("version %d (%s %s rv %s)", i, ev.typ, s.Name, s.ResourceVersion)
		families[s.Name] = s.AddressType
		if ev.typ == watch.Deleted {
			delete(current, s.Name)
		} else {
			current[s.Name] = sliceListing(t, where, s)
		}
		fam := s.AddressType
		now := map[string]listing{}
		for name, l := range current {
			if families[name] != fam {
				continue
			}
			for uid, entry := range l {
				if _, dup := now[uid]; dup {
					t.Errorf("%s: pod %s is listed in two %s slices", where, entry.name, fam)
				}
				now[uid] = entry
			}
		}
		for uid, l := range now {
			if f, ok := first[uid]; ok && f.id != l.id {
				t.Errorf("%s: pod %s has identifier %d, earlier %d", where, l.name, l.id, f.id)
			}
			if gone[fam][uid] {
				t.Errorf("%s: pod %s is back in the %s slices after it left them", where, l.name, fam)
			}
			if _, ok := first[uid]; !ok {
				first[uid] = l
				byName[l.name] = l.id
				if pred, ok := heirs[l.name]; ok {
					if want, known := byName[pred]; !known || want != l.id {
						t.Errorf("%s: %s, the replacement of %s, is listed first with identifier %d, want %s's %d (known %v)",
							where, l.name, pred, l.id, pred, want, known)
					}
				}
			}
		}
		for uid := range listed[fam] {
			if _, still := now[uid]; !still {
				if gone[fam] == nil {
					gone[fam] = map[string]bool{}
				}
				gone[fam][uid] = true
			}
		}
		listed[fam] = map[string]bool{}
		for uid := range now {
			listed[fam][uid] = true
		}
	}
	return checked
}

// sliceListing reads one slice version as pod UID -> listing, failing when
// an address is listed twice or lacks an identifier.
func sliceListing(t *testing.T, where string, s *discoveryv1.EndpointSlice) map[string]listing {
	t.Helper()
	var ids map[string]int
	if err := json.Unmarshal([]byte(s.Annotations[kube.AnnotationEndpointIdentifiers]), &ids); err != nil {
		t.Errorf("%s: identifiers annotation: %v", where, err)
	}
	if len(ids) != len(s.Endpoints) {
		t.Errorf("%s: %d identifiers for %d endpoints", where, len(ids), len(s.Endpoints))
	}
	out := map[string]listing{}
	for _, ep := range s.Endpoints {
		id, ok := ids[ep.Addresses[0]]
		if !ok || ep.TargetRef == nil {
			t.Errorf("%s: endpoint %v without an identifier or a pod", where, ep.Addresses)
			continue
		}
		out[string(ep.TargetRef.UID)] = listing{name: ep.TargetRef.Name, id: id}
	}
	return out
}
