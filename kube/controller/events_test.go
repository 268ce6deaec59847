package controller

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
)

// drain returns the Events recorded so far.
func drain(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestWarnEachReportsEachProblemOnce(t *testing.T) {
	rec := events.NewFakeRecorder(100)
	r := newReporter()
	r.setRecorder(rec)
	gw := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gw", UID: "gw-uid"}} // any object with a UID
	const family = podEvents
	sysctl := problem{key: "pod: SysctlForbidden", reason: "Failed", note: "sysctl"}
	config := problem{key: "container sllbrd: create", reason: "NotCreated", note: "config"}

	r.warnEach(gw, family, []problem{sysctl, config})
	if got := drain(rec); !slices.Equal(got, []string{"Warning Failed sysctl", "Warning NotCreated config"}) {
		t.Errorf("first report: %q", got)
	}
	// The problem persists, with another note (another pod): not again.
	otherPod := sysctl
	otherPod.note = "sysctl, another pod"
	r.warnEach(gw, family, []problem{otherPod, config})
	if got := drain(rec); len(got) != 0 {
		t.Errorf("a lasting problem was reported again: %q", got)
	}
	// Another reason's Events of the same object are independent.
	r.warn(gw, ReasonInvalidTemplate, "bad template")
	r.warnEach(gw, family, []problem{sysctl})
	if got := drain(rec); !slices.Equal(got, []string{"Warning InvalidTemplate bad template"}) {
		t.Errorf("after one problem went away: %q", got)
	}
	// The one that went away comes back: reported again.
	config.note = "config again"
	r.warnEach(gw, family, []problem{sysctl, config})
	if got := drain(rec); !slices.Equal(got, []string{"Warning NotCreated config again"}) {
		t.Errorf("a problem that came back: %q", got)
	}
	r.warnEach(gw, family, nil)
	r.warnEach(gw, family, []problem{sysctl})
	if got := drain(rec); !slices.Equal(got, []string{"Warning Failed sysctl"}) {
		t.Errorf("after every problem was resolved: %q", got)
	}
	r.warn(gw, ReasonInvalidTemplate, "bad template")
	if got := drain(rec); len(got) != 0 {
		t.Errorf("warnEach disturbed warn's memory: %q", got)
	}
}
