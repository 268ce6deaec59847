package manifest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	testGateway = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: sllb-a}
spec:
  gatewayClassName: x
  listeners: [{name: all, port: 4000, protocol: TCP}]
  infrastructure:
    annotations:
      meridio-experiment/networks: '[{"name":"n","interface":"net1"}]'
      meridio-experiment/network-subnets: '["169.111.100.0/24"]'
---
apiVersion: v1
kind: Service
metadata:
  name: service-a
  labels: {service.kubernetes.io/service-proxy-name: sllb-a}
`
	testRoute = `apiVersion: meridio.experiment.gateway.api.poc/v1alpha1
kind: L34Route
metadata: {name: r}
spec:
  parentRefs: [{name: sllb-a}]
  backendRefs: [{name: service-a, port: 1}]
  priority: PRIORITY
  destinationCIDRs: [20.0.0.1/32]
  protocols: [TCP]
`
)

// runSource starts a FileSource that polls only once an hour, so that only
// inotify can explain a reaction, and returns its updates; the source stops
// when the test ends.
func runSource(t *testing.T, path string, opts ...Option) <-chan Update {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	updates := make(chan Update, 2000)
	done := make(chan error, 1)
	src := NewFileSource(path, "sllb-a", append([]Option{WithPollInterval(time.Hour)}, opts...)...)
	go func() { done <- src.Run(ctx, func(u Update) { updates <- u }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v", err)
		}
	})
	return updates
}

func nextUpdate(t *testing.T, updates <-chan Update) Update {
	t.Helper()
	select {
	case u := <-updates:
		return u
	case <-time.After(5 * time.Second):
		t.Fatal("no update within 5s")
		return Update{}
	}
}

func expectNoUpdate(t *testing.T, updates <-chan Update) {
	t.Helper()
	select {
	case u := <-updates:
		t.Fatalf("unexpected update %+v (err %v)", u.State, u.Err)
	case <-time.After(200 * time.Millisecond): // 40 times the quiet period
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFileSourceFollowsEdits(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "gateway.yaml"), testGateway)
	routeFile := filepath.Join(dir, "route.yml")
	write(t, routeFile, strings.Replace(testRoute, "PRIORITY", "1", 1))
	write(t, filepath.Join(dir, "notes.txt"), "not a manifest")
	write(t, filepath.Join(dir, ".hidden.yaml"), "not: [valid")
	updates := runSource(t, dir)

	u := nextUpdate(t, updates)
	if u.Err != nil || u.State == nil || u.State.Generation != 1 || len(u.State.Routes) != 1 || len(u.Problems) != 0 {
		t.Fatalf("first update = %+v, %v, err %v; want generation 1 with one route", u.State, u.Problems, u.Err)
	}
	first := u.State

	write(t, routeFile, "# a comment changes nothing\n"+strings.Replace(testRoute, "PRIORITY", "1", 1))
	expectNoUpdate(t, updates)

	write(t, routeFile, strings.Replace(testRoute, "PRIORITY", "7", 1))
	u = nextUpdate(t, updates)
	if u.Err != nil || u.State.Generation != 2 || u.State.Routes[0].Priority != 7 || first.Routes[0].Priority != 1 {
		t.Fatalf("after edit: generation %d priority %d err %v; want 2, 7, nil and the first state untouched",
			u.State.Generation, u.State.Routes[0].Priority, u.Err)
	}
	good := u.State

	broken := filepath.Join(dir, "broken.yaml")
	write(t, broken, "apiVersion: v1\nkind: Service\n  bad: [indent\n")
	u = nextUpdate(t, updates)
	if u.Err == nil || !strings.Contains(u.Err.Error(), "broken.yaml: document 1") || u.State != good {
		t.Fatalf("after breaking edit: err %v, state %p; want an error naming broken.yaml and the last good state %p",
			u.Err, u.State, good)
	}

	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	u = nextUpdate(t, updates)
	if u.Err != nil || u.State != good {
		t.Fatalf("after repair: err %v, state %p; want no error and state %p", u.Err, u.State, good)
	}

	write(t, filepath.Join(dir, "bad-route.yaml"), strings.Replace(
		strings.Replace(testRoute, "PRIORITY", "0", 1), "name: r}", "name: bad}", 1))
	u = nextUpdate(t, updates)
	if u.Err != nil || u.State != good || len(u.Problems) != 1 || u.Problems[0].Name != "bad" {
		t.Fatalf("after invalid route: err %v, state %p, problems %v; want state %p kept and one problem",
			u.Err, u.State, u.Problems, good)
	}

	write(t, filepath.Join(dir, "gateway.yaml"), "")
	u = nextUpdate(t, updates)
	if u.Err == nil || !strings.Contains(u.Err.Error(), `no Gateway "sllb-a"`) || u.State != good {
		t.Fatalf("without gateway: err %v, state %p; want a missing-Gateway error and state %p", u.Err, u.State, good)
	}
}

func TestFileSourceMissingPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "later.yaml")
	updates := runSource(t, path)
	u := nextUpdate(t, updates)
	if u.Err == nil || u.State != nil {
		t.Fatalf("missing path: state %v err %v; want nil state and an error", u.State, u.Err)
	}
	write(t, path, testGateway)
	u = nextUpdate(t, updates)
	if u.Err != nil || u.State == nil || u.State.Generation != 1 {
		t.Fatalf("after creating the file: state %+v err %v; want generation 1", u.State, u.Err)
	}
}
