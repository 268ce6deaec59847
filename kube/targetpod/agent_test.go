package targetpod

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sllbrd/sllbrd/internal/targetnet"
	"github.com/sllbrd/sllbrd/kube"
)

// TestAgentReportsAnInvalidFirstAnnotation starts an agent in a pod whose
// status annotation is an earlier container's "ready" and whose desired
// annotation is invalid: the agent applies nothing (the applier has no
// kernel: a call would panic) and replaces the stale status with one that
// says not ready, and why.
func TestAgentReportsAnInvalidFirstAnnotation(t *testing.T) {
	earlier := Status{Version: SchemaVersion, ObservedGeneration: 4, Ready: true,
		Gateways: []GatewayStatus{{Name: "sllb-a", Table: 50000}}}.Marshal()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-1", Annotations: map[string]string{
		kube.AnnotationTargetNetwork:       `{"version":2,"generation":5,"gateways":[]}`,
		kube.AnnotationTargetNetworkStatus: earlier,
		kube.AnnotationTargetAgent:         kube.TargetAgentSidecar,
	}}}
	client := fake.NewClientset(pod)
	// The fake's own watch ignores the context: one the test stops.
	w := watch.NewRaceFreeFake()
	client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, w, nil })
	a := NewAgent(client, "ns", "app-1", targetnet.New(nil), WithLogger(slog.New(slog.DiscardHandler)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	var last string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		p, err := client.CoreV1().Pods("ns").Get(ctx, "app-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		last = p.Annotations[kube.AnnotationTargetNetworkStatus]
		if last == earlier {
			continue
		}
		s, err := ParseStatus(last)
		if err != nil {
			t.Fatal(err)
		}
		if s.Ready || s.ObservedGeneration != 0 || len(s.Gateways) != 0 || len(s.Errors) != 1 ||
			!strings.Contains(s.Errors[0], "version 2") || !strings.Contains(s.Errors[0], "nothing applied since this sidecar started") {
			t.Errorf("status %s", last)
		}
		if ready, why := a.Ready(); ready || !strings.Contains(strings.Join(why, ";"), "is invalid") {
			t.Errorf("Ready = %v %v", ready, why)
		}
		return
	}
	t.Fatalf("the earlier container's status stays: %s", last)
}
