package apiserver_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/sllbrd/sllbrd/kube/apiserver"
	"github.com/sllbrd/sllbrd/kube/manifest"
)

// TestIntegrationAPIServerRestart stops kube-apiserver (etcd stays): the
// source keeps its state and reports not ready; after the restart it is
// ready again without emitting anything. Then it measures the time from an
// API write to the Update that reflects it.
func TestIntegrationAPIServerRestart(t *testing.T) {
	e := newEnv(t, "sllbrd-test-restart")
	e.createExamples()
	r := e.startSource(apiserver.WithProbeInterval(500 * time.Millisecond))
	first := r.waitUpdate(t, "a state", func(u manifest.Update) bool { return u.State != nil })
	r.waitReady(t, true, 5*time.Second)

	e.cp.StopAPIServer()
	why := r.waitReady(t, false, 10*time.Second)
	if !strings.Contains(why, "API server unreachable") {
		t.Errorf("not-ready reason %q does not say the API server is unreachable", why)
	}
	t.Logf("while stopped: %s", why)
	r.noUpdate(t, 2*time.Second, "kube-apiserver stopped")

	e.cp.StartAPIServer()
	r.waitReady(t, true, 30*time.Second)
	r.noUpdate(t, 3*time.Second, "kube-apiserver restarted with the same objects")

	// API write -> Update latency, with the default 100ms debounce.
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
