package informer

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

func TestRetryAfter(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name     string
		failures int
		err      error
		ran      time.Duration
		want     time.Duration
		wantF    int
	}{
		{"a watch that ran ended: at once", 0, nil, MinRun, 0, 0},
		{"a watch that ran resets the failures", 7, nil, time.Minute, 0, 0},
		{"a failed list", 0, boom, time.Hour, BackoffInit, 1},
		{"a watch that ended at once", 0, nil, MinRun - time.Millisecond, BackoffInit, 1},
		{"the second failure doubles", 1, boom, 0, 2 * BackoffInit, 2},
		{"the fifth", 4, boom, 0, 16 * BackoffInit, 5},
		{"capped", 7, boom, 0, BackoffMax, 8},
		{"capped however many", 1000, boom, 0, BackoffMax, 1001},
	} {
		d, f := retryAfter(c.failures, c.err, c.ran)
		if d != c.want || f != c.wantF {
			t.Errorf("%s: retryAfter(%d, %v, %v) = %v, %d; want %v, %d", c.name, c.failures, c.err, c.ran, d, f, c.want, c.wantF)
		}
	}
}

// fakeServer is a ListerWatcher over a map of ConfigMaps: each list
// returns them at the current version, each watch is a watch.FakeWatcher
// the test drives.
type fakeServer struct {
	mu      sync.Mutex
	objects map[string]*corev1.ConfigMap
	version int
	lists   int // lists and watch-lists: full reads
	watches chan *watch.FakeWatcher
}

func newFakeServer(names ...string) *fakeServer {
	f := &fakeServer{objects: map[string]*corev1.ConfigMap{}, watches: make(chan *watch.FakeWatcher, 16)}
	for _, n := range names {
		f.put(n, "v0")
	}
	return f
}

// put writes a ConfigMap at a new version and returns it.
func (f *fakeServer) put(name, value string) *corev1.ConfigMap {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version++
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: itoa(f.version),
			Annotations: map[string]string{"bulky": "drop me"}},
		Data: map[string]string{"value": value},
	}
	f.objects[name] = cm
	return cm.DeepCopy()
}

func (f *fakeServer) remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version++
	delete(f.objects, name)
}

func (f *fakeServer) listCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists
}

// lw serves lists and watches; a watch asking for the initial events (a
// watch-list, client-go's default) gets every object and then the bookmark
// that ends them, as a server does.
func (f *fakeServer) lw() *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.lists++
			list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: itoa(f.version)}}
			for _, cm := range f.objects {
				list.Items = append(list.Items, *cm.DeepCopy())
			}
			return list, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			w := watch.NewFakeWithChanSize(len(f.objects)+1, false)
			if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
				f.lists++
				for _, cm := range f.objects {
					w.Add(cm.DeepCopy())
				}
				w.Action(watch.Bookmark, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: itoa(f.version),
					Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
			}
			f.watches <- w
			return w, nil
		},
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// recorder records the handler's calls as "add x", "update x value",
// "delete x", "gone x" (a DeletedFinalStateUnknown).
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

func (r *recorder) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			s := "add " + obj.(*corev1.ConfigMap).Name
			if initial {
				s += " initial"
			}
			r.add(s)
		},
		UpdateFunc: func(_, obj any) {
			cm := obj.(*corev1.ConfigMap)
			r.add("update " + cm.Name + " " + cm.Data["value"])
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				r.add("gone " + d.Obj.(*corev1.ConfigMap).Name)
				return
			}
			r.add("delete " + obj.(*corev1.ConfigMap).Name)
		},
	}
}

// trim drops annotations, as a user's transform would.
func trim(obj any) (any, error) {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		cm.Annotations = nil
	}
	return obj, nil
}

func start(t *testing.T, f *fakeServer, rec *recorder) *Informer {
	t.Helper()
	inf := New(f.lw(), &corev1.ConfigMap{}, Options{Transform: trim, Handler: rec.handler()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return inf
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func nextWatch(t *testing.T, f *fakeServer) *watch.FakeWatcher {
	t.Helper()
	select {
	case w := <-f.watches:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("no watch within 10s")
		return nil
	}
}

// TestInformerTellsEveryChange: the first list as initial adds, then each
// watch event in order, the store holding the transformed objects before
// the handler hears of them.
func TestInformerTellsEveryChange(t *testing.T) {
	f := newFakeServer("a")
	rec := &recorder{}
	inf := start(t, f, rec)
	w := nextWatch(t, f)
	eventually(t, "synced", inf.HasSynced)
	if got := rec.take(); !slices.Equal(got, []string{"add a initial"}) {
		t.Fatalf("first list: %q", got)
	}
	w.Add(f.put("b", "v1"))
	w.Modify(f.put("a", "v2"))
	b := f.put("b", "v3")
	f.remove("b")
	w.Delete(b)
	w.Delete(b) // again: already gone, nothing to tell
	want := []string{"add b", "update a v2", "delete b"}
	eventually(t, "the watch's events", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.calls) >= len(want)
	})
	if got := rec.take(); !slices.Equal(got, want) {
		t.Fatalf("handler calls %q, want %q", got, want)
	}
	items := inf.GetStore().List()
	if len(items) != 1 {
		t.Fatalf("store holds %d objects, want a", len(items))
	}
	if cm := items[0].(*corev1.ConfigMap); cm.Name != "a" || cm.Data["value"] != "v2" || cm.Annotations != nil {
		t.Errorf("store holds %+v, want a at v2 without annotations", cm)
	}
}

// TestInformerRelistsAfterExpiry: a 410 in a watch that ran for MinRun
// relists; the relist tells an update for what is still there, an add
// for what is new and a DeletedFinalStateUnknown for what went.
func TestInformerRelistsAfterExpiry(t *testing.T) {
	f := newFakeServer("a", "b")
	rec := &recorder{}
	inf := start(t, f, rec)
	w := nextWatch(t, f)
	eventually(t, "synced", inf.HasSynced)
	rec.take()
	f.put("c", "v1") // missed by the watch: the server restarted
	f.remove("b")
	time.Sleep(MinRun)
	gone := apierrors.NewResourceExpired("too old resource version")
	gone.ErrStatus.Details = &metav1.StatusDetails{Group: schema.GroupResource{}.Group}
	w.Error(&gone.ErrStatus)
	nextWatch(t, f)
	if n := f.listCount(); n != 2 {
		t.Fatalf("%d full reads, want 2", n)
	}
	want := map[string]bool{"update a v0": true, "add c": true, "gone b": true}
	eventually(t, "the relist's calls", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.calls) >= len(want)
	})
	got := rec.take()
	if len(got) != len(want) {
		t.Fatalf("relist: handler calls %q, want %v", got, want)
	}
	for _, c := range got {
		if !want[c] {
			t.Errorf("relist: unexpected call %q (all: %q)", c, got)
		}
	}
	if n := len(inf.GetStore().ListKeys()); n != 2 {
		t.Errorf("store holds %d objects after the relist, want 2", n)
	}
}
