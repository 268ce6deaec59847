package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sllbrd/sllbrd/internal/liveness"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }
func deadReport(svc, addr string) livenessReport {
	return livenessReport{change: liveness.Change{Addr: netip.MustParseAddr(addr), Alive: false, Detection: 812 * time.Millisecond},
		service: svc, id: 1, config: defaultLiveness}
}

// drain returns the events queued so far.
func drain(r *livenessEvents) []livenessEvent {
	var out []livenessEvent
	for {
		select {
		case ev := <-r.queue:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// TestLivenessEventsRateLimit: one Event per endpoint per minute; at most
// eventBurst at once, then eventBurst a minute; what is left out is counted.
func TestLivenessEventsRateLimit(t *testing.T) {
	clock := &fakeClock{t: goldenClock}
	r := newLivenessEvents("sllbrd-abc", clock.now, nil)
	ep := deadReport("service-a", "169.111.100.12")
	r.report([]livenessReport{ep})
	back := ep
	back.change.Alive, back.change.Detection = true, 5*time.Second
	clock.advance(10 * time.Second)
	r.report([]livenessReport{back, ep})
	if evs := drain(r); len(evs) != 1 || !evs[0].warning || evs[0].reason != reasonEndpointDead {
		t.Fatalf("events %+v, want one EndpointDead", evs)
	}
	if rec, lim := r.counts(); rec != 1 || lim != 2 {
		t.Fatalf("recorded %d, limited %d; want 1, 2", rec, lim)
	}
	// The same address in another Service is another endpoint.
	r.report([]livenessReport{deadReport("service-b", "169.111.100.12")})
	clock.advance(50 * time.Second) // a minute after the first
	r.report([]livenessReport{back})
	evs := drain(r)
	if len(evs) != 2 || evs[0].service != "service-b" || evs[1].warning || evs[1].reason != reasonEndpointAlive {
		t.Fatalf("events %+v, want service-b's EndpointDead, then service-a's EndpointAlive", evs)
	}
	// Many at once (this SLLBR's own link broke): eventBurst, then eventBurst a minute.
	var many []livenessReport
	for i := range eventBurst + 5 {
		many = append(many, deadReport("service-c", fmt.Sprintf("169.111.101.%d", i)))
	}
	r.report(many) // one token spent in this minute (the refill caps at eventBurst)
	if n := len(drain(r)); n != eventBurst-1 {
		t.Fatalf("burst of %d: %d Events, want %d", len(many), n, eventBurst-1)
	}
	clock.advance(eventPerEndpoint / eventBurst) // one token
	r.report([]livenessReport{deadReport("service-d", "169.111.102.1"), deadReport("service-d", "169.111.102.2")})
	if n := len(drain(r)); n != 1 {
		t.Fatalf("one token earned: %d Events", n)
	}
	if rec, lim := r.counts(); rec != 1+1+1+eventBurst-1+1 || rec+lim != 1+2+1+1+uint64(len(many))+2 {
		t.Fatalf("recorded %d, limited %d", rec, lim)
	}
}

// TestLivenessEventNotes: a note says which SLLBR, which endpoint, how long,
// with which configuration, and what it does about it.
func TestLivenessEventNotes(t *testing.T) {
	r := newLivenessEvents("sllbrd-abc", time.Now, nil)
	dead := r.event(deadReport("service-a", "fd00:111::12"))
	want := "SLLBR sllbrd-abc: endpoint fd00:111::12 (identifier 1) did not answer ICMP echo for 812ms (liveness interval=200ms,multiplier=4,hold-down=5s): this SLLBR sends it no new flows until it answers for the hold-down"
	if dead.note != want || !dead.warning || dead.service != "service-a" {
		t.Errorf("dead: %+v\nwant note %q", dead, want)
	}
	rep := deadReport("service-a", "fd00:111::12")
	rep.change.Alive, rep.change.Detection = true, 5200*time.Millisecond
	alive := r.event(rep)
	if !strings.Contains(alive.note, "answers ICMP echo again, for 5.2s now") || alive.warning || alive.reason != reasonEndpointAlive {
		t.Errorf("alive: %+v", alive)
	}
	if len(dead.note) > 1024 {
		t.Errorf("note of %d bytes: the API server takes 1024", len(dead.note))
	}
}

// eventCall is one Eventf call.
type eventCall struct {
	regarding, related        runtime.Object
	typ, reason, action, note string
}

// fakeRecorder records Eventf calls.
type fakeRecorder struct {
	mu    sync.Mutex
	calls []eventCall
}

func (f *fakeRecorder) Eventf(regarding, related runtime.Object, typ, reason, action, note string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, eventCall{regarding, related, typ, reason, action, fmt.Sprintf(note, args...)})
}

// TestKubeEventSink: an Event is about the Service as the API server has
// it (with its UID), related to the EndpointSlice endpoint of the address;
// a Service or an address that cannot be found is named without.
func TestKubeEventSink(t *testing.T) {
	ready := true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "red", Name: "service-a-v6", UID: "uid-slice",
			Labels: map[string]string{discoveryv1.LabelServiceName: "service-a"}},
		AddressType: discoveryv1.AddressTypeIPv6,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"fd00:111::11"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
			{Addresses: []string{"fd00:111::12"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}
	client := fake.NewClientset(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "red", Name: "service-a", UID: types.UID("uid-a")}}, slice)
	rec := &fakeRecorder{}
	var logs bytes.Buffer
	sink := kubeEventSink(rec, client, "red", slog.New(slog.NewTextHandler(&logs, nil)))
	sink(context.Background(), livenessEvent{warning: true, reason: reasonEndpointDead, service: "service-a", addr: netip.MustParseAddr("fd00:111::12"), note: "dead"})
	sink(context.Background(), livenessEvent{reason: reasonEndpointAlive, service: "service-gone", addr: netip.MustParseAddr("fd00:111::12"), note: "alive"})
	if len(rec.calls) != 2 {
		t.Fatalf("calls %+v", rec.calls)
	}
	c := rec.calls[0]
	svc, ok := c.regarding.(*corev1.Service)
	if !ok || svc.UID != "uid-a" || c.typ != corev1.EventTypeWarning || c.reason != reasonEndpointDead || c.action != eventActionProbe || c.note != "dead" {
		t.Errorf("first Event: %+v", c)
	}
	want := &corev1.ObjectReference{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice", Namespace: "red", Name: "service-a-v6",
		UID: "uid-slice", FieldPath: "endpoints[1]"}
	if ref, ok := c.related.(*corev1.ObjectReference); !ok || *ref != *want {
		t.Errorf("first Event related to %+v, want %+v", c.related, want)
	}
	c = rec.calls[1]
	ref, ok := c.regarding.(*corev1.ObjectReference)
	if !ok || ref.Kind != "Service" || ref.Namespace != "red" || ref.Name != "service-gone" || c.typ != corev1.EventTypeNormal || c.related != nil {
		t.Errorf("second Event: %+v (%+v)", c, c.regarding)
	}
	if !strings.Contains(logs.String(), "service-gone") {
		t.Errorf("the failed read is not logged: %s", logs.String())
	}
}

// TestLogSink: without an API server, an Event is a log line (dead: warn).
func TestLogSink(t *testing.T) {
	var logs bytes.Buffer
	logSink(slog.New(slog.NewTextHandler(&logs, nil)))(context.Background(),
		livenessEvent{warning: true, reason: reasonEndpointDead, service: "service-a", note: "it is dead"})
	if got := logs.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "reason=EndpointDead service=service-a") ||
		!strings.Contains(got, `note="it is dead"`) {
		t.Errorf("log: %s", got)
	}
}
