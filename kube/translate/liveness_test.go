package translate_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sllbrd/sllbrd/kube"
	"github.com/sllbrd/sllbrd/kube/translate"
	"github.com/sllbrd/sllbrd/model"
)

func serviceWith(annotations map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "default",
		Labels: map[string]string{kube.LabelServiceProxyName: "sllb-a"}, Annotations: annotations}}
}

// TestLiveness pins the endpoint-liveness annotation: the defaults, off,
// every key alone and together, both ends of every bound, and each fault
// with the words its message must carry (the key, the range or syntax).
func TestLiveness(t *testing.T) {
	const ms = time.Millisecond
	def := model.Liveness{Interval: 200 * ms, Multiplier: 4, HoldDown: 5 * time.Second}
	tests := []struct {
		value string
		want  model.Liveness
		err   []string // substrings of the error; nil: valid
	}{
		{value: "off", want: model.Liveness{}},
		{value: " off ", want: model.Liveness{}},
		{value: "interval=100ms", want: model.Liveness{Interval: 100 * ms, Multiplier: 4, HoldDown: 5 * time.Second}},
		{value: "multiplier=3", want: model.Liveness{Interval: 200 * ms, Multiplier: 3, HoldDown: 5 * time.Second}},
		{value: "hold-down=1m", want: model.Liveness{Interval: 200 * ms, Multiplier: 4, HoldDown: time.Minute}},
		{value: "hold-down=0s , multiplier = 3,interval=50ms", want: model.Liveness{Interval: 50 * ms, Multiplier: 3}},
		{value: "interval=10ms,multiplier=1,hold-down=0", want: model.Liveness{Interval: 10 * ms, Multiplier: 1}},
		{value: "interval=10s,multiplier=6,hold-down=10m", want: model.Liveness{Interval: 10 * time.Second, Multiplier: 6, HoldDown: 10 * time.Minute}},
		{value: "interval=1.5s,multiplier=40", want: model.Liveness{Interval: 1500 * ms, Multiplier: 40, HoldDown: 5 * time.Second}},
		{value: "probe=icmp", want: def},
		{value: "probe=bfd", want: model.Liveness{Interval: 200 * ms, Multiplier: 4, HoldDown: 5 * time.Second, Probe: model.ProbeBFD}},
		{value: "interval=50ms, probe = bfd ,multiplier=3,hold-down=1s", want: model.Liveness{Interval: 50 * ms, Multiplier: 3, HoldDown: time.Second, Probe: model.ProbeBFD}},
		{value: "interval=10500us,probe=bfd", want: model.Liveness{Interval: 10500 * time.Microsecond, Multiplier: 4, HoldDown: 5 * time.Second, Probe: model.ProbeBFD}},
		{value: "", err: []string{`is not key=value`, `"off"`, "interval=DURATION", "probe=icmp|bfd"}},
		{value: "fast", err: []string{`"fast" is not key=value`, "multiplier=N", "hold-down=DURATION"}},
		{value: "OFF", err: []string{`"OFF" is not key=value`}},
		{value: "off,interval=1s", err: []string{`"off" stands alone`}},
		{value: "interval=1s,", err: []string{`"" is not key=value`}},
		{value: "=1s", err: []string{`"=1s" is not key=value`}},
		{value: "timeout=1s", err: []string{`unknown key "timeout"`, "interval, multiplier, hold-down and probe"}},
		{value: "Interval=1s", err: []string{`unknown key "Interval"`}},
		{value: "interval=1s,interval=2s", err: []string{"interval is given twice"}},
		{value: "interval=200", err: []string{`interval: "200" is not a duration`}},
		{value: "interval=", err: []string{`interval: "" is not a duration`}},
		{value: "interval=9ms", err: []string{"interval: 9ms is outside 10ms..10s"}},
		{value: "interval=10001ms", err: []string{"interval: 10.001s is outside 10ms..10s"}},
		{value: "interval=-1s", err: []string{"interval: -1s is outside 10ms..10s"}},
		{value: "multiplier=0", err: []string{`multiplier: "0" is not an integer in 1..50`}},
		{value: "multiplier=51", err: []string{`multiplier: "51" is not an integer in 1..50`}},
		{value: "multiplier=2.5", err: []string{`multiplier: "2.5" is not an integer in 1..50`}},
		{value: "hold-down=-1ns", err: []string{"hold-down: -1ns is outside 0s..10m"}},
		{value: "hold-down=10m1s", err: []string{"hold-down: 10m1s is outside 0s..10m"}},
		{value: "hold-down=5", err: []string{`hold-down: "5" is not a duration`}},
		{value: "probe=tcp", err: []string{`probe: "tcp" is neither icmp nor bfd`}},
		{value: "probe=BFD", err: []string{`probe: "BFD" is neither icmp nor bfd`}},
		{value: "probe=", err: []string{`probe: "" is neither icmp nor bfd`}},
		{value: "probe=bfd,probe=icmp", err: []string{"probe is given twice"}},
		{value: "off,probe=bfd", err: []string{`"off" stands alone`}},
		{value: "interval=10s,multiplier=7", err: []string{"interval 10s × multiplier 7 is 1m10s", "at most 1m"}},
		{value: "interval=1201ms,multiplier=50", err: []string{"interval 1.201s × multiplier 50 is 1m0.05s", "at most 1m"}},
	}
	for _, tt := range tests {
		got, err := translate.Liveness(serviceWith(map[string]string{kube.AnnotationEndpointLiveness: tt.value}))
		switch {
		case tt.err == nil && err != nil:
			t.Errorf("%q: %v", tt.value, err)
		case tt.err == nil && got != tt.want:
			t.Errorf("%q = %+v, want %+v", tt.value, got, tt.want)
		case tt.err != nil && err == nil:
			t.Errorf("%q = %+v, want an error", tt.value, got)
		case tt.err != nil:
			for _, w := range append(tt.err, `"`+tt.value+`": `) { // the whole value is quoted first
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q: error %q does not say %q", tt.value, err, w)
				}
			}
		}
	}
	got, err := translate.Liveness(serviceWith(nil))
	if err != nil || got != def {
		t.Errorf("no annotation = %+v, %v; want the defaults %+v", got, err, def)
	}
	if got.Detection() >= time.Second {
		t.Errorf("default detection %v, want under a second", got.Detection())
	}
}

// checkLiveness pins testdata/liveness.yaml independently of its golden
// file: the valid Services carry their Liveness, every invalid one is left
// out with a Problem on the annotation, and so is the route that names one.
func checkLiveness(t *testing.T, s *model.State, problems []translate.Problem) {
	const ms = time.Millisecond
	want := map[string]model.Liveness{
		"live-default":      {Interval: 200 * ms, Multiplier: 4, HoldDown: 5 * time.Second},
		"live-off":          {},
		"live-interval":     {Interval: 100 * ms, Multiplier: 4, HoldDown: 5 * time.Second},
		"live-all-keys":     {Interval: 50 * ms, Multiplier: 3},
		"live-upper-bounds": {Interval: 10 * time.Second, Multiplier: 6, HoldDown: 10 * time.Minute},
		"live-lower-bounds": {Interval: 10 * ms, Multiplier: 1},
		"live-icmp":         {Interval: 200 * ms, Multiplier: 4, HoldDown: 5 * time.Second},
		"live-bfd":          {Interval: 100 * ms, Multiplier: 3, HoldDown: 5 * time.Second, Probe: model.ProbeBFD},
	}
	if len(s.Services) != len(want) {
		t.Errorf("%d Services, want %d: %+v", len(s.Services), len(want), s.Services)
	}
	for _, svc := range s.Services {
		if w, ok := want[svc.Name]; !ok || svc.Liveness != w {
			t.Errorf("Service %s: Liveness %+v, want %+v (listed: %v)", svc.Name, svc.Liveness, w, ok)
		}
	}
	var bad int
	for _, p := range problems {
		if p.Kind == translate.KindService && p.Field == "metadata.annotations["+kube.AnnotationEndpointLiveness+"]" {
			bad++
			if !strings.HasPrefix(p.Name, "bad-") {
				t.Errorf("problem about a valid Service: %v", p)
			}
		}
	}
	if bad != 18 {
		t.Errorf("%d liveness problems, want 18 (one per bad-* Service): %v", bad, problems)
	}
	if got := routeNames(s); len(got) != 1 || got[0] != "default/to-live-interval" {
		t.Errorf("routes %v, want only default/to-live-interval", got)
	}
	assertProblem(t, problems, translate.Problem{Kind: "L34Route", Namespace: "default",
		Name: "to-bad-two-annotations", Field: "spec.backendRefs[0]"})
}
