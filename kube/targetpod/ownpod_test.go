package targetpod

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestWatchPodReadsThePodWhileWatchesEndAtOnce: a server that ends every
// watch at once (its watch cache not ready after a restart) still has the
// pod's changes delivered, by gets, within a few short backoffs.
func TestWatchPodReadsThePodWhileWatchesEndAtOnce(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "t1", Namespace: "ns", ResourceVersion: "1",
		Annotations: map[string]string{"v": "1"}}}
	c := fake.NewClientset(pod)
	var watches atomic.Int32
	c.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		watches.Add(1)
		w := watch.NewFake()
		w.Stop() // ends at once
		return true, w, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seen := make(chan string, 100)
	go func() {
		_ = WatchPod(ctx, c, "ns", "t1", slog.New(slog.DiscardHandler), func(p *corev1.Pod) {
			if p != nil {
				seen <- p.Annotations["v"]
			}
		})
	}()
	waitSeen := func(want string) {
		t.Helper()
		for {
			select {
			case v := <-seen:
				if v == want {
					return
				}
			case <-ctx.Done():
				t.Fatalf("version %q of the pod never delivered (%d watches)", want, watches.Load())
			}
		}
	}
	waitSeen("1")
	for watches.Load() < 4 { // the backoff has grown past the cap
		time.Sleep(10 * time.Millisecond)
	}
	updated := pod.DeepCopy()
	updated.ResourceVersion, updated.Annotations["v"] = "2", "2"
	if err := c.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), runtime.Object(updated), "ns"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitSeen("2")
	if d := time.Since(start); d > 2*shortWatchBackoff+time.Second {
		t.Errorf("the change arrived %v after it was made, want within about one short backoff (%v)", d, shortWatchBackoff)
	}
}
