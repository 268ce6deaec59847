package apiserver_test

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/rest"

	"github.com/sllbrd/sllbrd/kube/apiserver"
	"github.com/sllbrd/sllbrd/kube/manifest"
)

// startStopped runs a source on the examples in namespace ns, probing the
// server every probe, then stops kube-apiserver and returns once the source
// is not ready and has emitted nothing for 2s; first is the source's first Update.
func startStopped(t *testing.T, ns string, probe time.Duration) (*env, *running, manifest.Update) {
	t.Helper()
	e := newEnv(t, ns)
	e.createExamples()
	r := e.startSource(apiserver.WithProbeInterval(probe))
	first := r.waitUpdate(t, "a state", func(u manifest.Update) bool { return u.State != nil })
	r.waitReady(t, true, waitTimeout)
	e.cp.StopAPIServer()
	r.waitReady(t, false, waitTimeout)
	r.noUpdate(t, 2*time.Second, "kube-apiserver stopped")
	return e, r, first
}

// TestIntegrationAPIServerRestart stops kube-apiserver (etcd stays): the
// source keeps its state and reports not ready; after the restart it is
// ready again without emitting anything. Then it measures the time from an
// API write to the Update that reflects it.
func TestIntegrationAPIServerRestart(t *testing.T) {
	e, r, first := startStopped(t, "sllbrd-test-restart", 500*time.Millisecond)
	_, why := r.src.Ready()
	if !strings.Contains(why, "API server unreachable") {
		t.Errorf("not-ready reason %q does not say the API server is unreachable", why)
	}
	t.Logf("while stopped: %s", why)

	e.cp.StartAPIServer()
	r.waitReady(t, true, waitTimeout)
	r.noUpdate(t, 3*time.Second, "kube-apiserver restarted with the same objects")

	// API write -> Update latency, with the default debounce.
	var lat []time.Duration
	for i := range 10 {
		start := time.Now()
		e.updateSlice(t, "service-a-ipv4", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Conditions.Ready = ptr(i%2 == 1)
		})
		r.waitUpdate(t, "the write "+strconv.Itoa(i), func(u manifest.Update) bool {
			return u.State != nil && u.State.Generation == first.State.Generation+uint64(i)+1
		})
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	t.Logf("API write -> Update latency over %d writes: min %v median %v max %v",
		len(lat), lat[0], lat[len(lat)/2], lat[len(lat)-1])
}

// TestIntegrationReadyOnlyAfterWatchesResume cuts the source off the API
// server (a proxy between them drops every connection), writes an
// EndpointSlice meanwhile through the server itself, and restores the path:
// the source must not report ready before it has emitted the state with
// that write, however early the server answers its probes. The write is
// complete before the source can reach the server again, so a source
// reporting ready on the server's /readyz alone, or on watches not yet
// resumed, fails.
func TestIntegrationReadyOnlyAfterWatchesResume(t *testing.T) {
	e := newEnv(t, "sllbrd-test-resume")
	e.createExamples()
	host, err := url.Parse(e.sllbrd.Host)
	if err != nil {
		t.Fatal(err)
	}
	o := newOutage(t, host.Host)
	viaProxy := rest.CopyConfig(e.sllbrd)
	viaProxy.Host = "https://" + o.addr
	r := e.startSourceWith(viaProxy, apiserver.WithProbeInterval(100*time.Millisecond))
	first := r.waitUpdate(t, "a state", func(u manifest.Update) bool { return u.State != nil })
	r.waitReady(t, true, waitTimeout)
	addr := first.State.Services[0].Endpoints[0].Addr.String()

	o.Cut()
	r.waitReady(t, false, waitTimeout)
	e.updateSlice(t, "service-a-ipv4", func(s *discoveryv1.EndpointSlice) {
		for i, ep := range s.Endpoints {
			if slices.Contains(ep.Addresses, addr) {
				s.Endpoints[i].Conditions.Ready = ptr(false)
			}
		}
	})
	if ok, _ := r.src.Ready(); ok {
		t.Fatal("ready while cut off the API server")
	}
	restored := time.Now()
	o.Restore()
	written := restored // the write completed before the path was restored
	deadline := written.Add(45 * time.Second)
	for {
		ok, why := r.src.Ready()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready 45s after the path was restored: %s", why)
		}
		time.Sleep(time.Millisecond)
	}
	ready := time.Now()
	var seen bool
	for drained := false; !drained; {
		select {
		case u := <-r.updates:
			if u.State != nil {
				ep, ok := endpoint(u.State, addr)
				seen = ok && !ep.Ready
			}
		default:
			drained = true
		}
	}
	if !seen {
		t.Fatalf("ready %v after the path to the API server was restored, but the write made during the outage is not in the last state emitted",
			ready.Sub(restored).Round(time.Millisecond))
	}
	t.Logf("path restored -> ready (the write emitted) %v", ready.Sub(restored).Round(time.Millisecond))
}

// resumeBound is how soon after kube-apiserver answers again the source
// must be ready: a probe period, a relist and a consistent read, with a
// wide margin for a loaded machine. client-go's informers took tens of
// seconds by the third restart in two minutes (kube/informer).
const resumeBound = 10 * time.Second

// TestIntegrationResumesAfterRestartsInARow restarts kube-apiserver four
// times in a row (etcd stays): after each restart the source must be
// ready, its watches resumed, within resumeBound of the server answering,
// and a write made then must be emitted.
func TestIntegrationResumesAfterRestartsInARow(t *testing.T) {
	e, r, first := startStopped(t, "sllbrd-test-restarts", 500*time.Millisecond)
	for i := 1; ; i++ {
		e.cp.StartAPIServer()
		back := time.Now()
		deadline := back.Add(resumeBound)
		for {
			ok, why := r.src.Ready()
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("restart %d: not ready %v after kube-apiserver answered: %s", i, resumeBound, why)
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("restart %d: ready %v after kube-apiserver answered", i, time.Since(back).Round(time.Millisecond))
		e.updateSlice(t, "service-a-ipv4", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Conditions.Ready = ptr(i%2 == 0)
		})
		r.waitUpdate(t, "the write after restart "+strconv.Itoa(i), func(u manifest.Update) bool {
			return u.State != nil && u.State.Generation == first.State.Generation+uint64(i)
		})
		if i == 4 {
			return
		}
		e.cp.StopAPIServer()
		r.waitReady(t, false, waitTimeout)
	}
}
