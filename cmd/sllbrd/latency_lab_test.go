package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/reconcile"
)

// Bounds of the latency and burst checks.
const (
	// latencyGoal is issue 11's goal for the median time from a
	// configuration write to the dataplane having applied it. The tests
	// report whether it is met; BenchmarkIntegrationFileEditLatency
	// measures it (make bench-latency).
	latencyGoal = 50 * time.Millisecond
	// latencyBound is what the tests assert of that median: twice the goal.
	// On the shared 2-vCPU machines the same code measured 31 ms and 50 ms
	// an hour apart (2026-11-26), so the goal itself is the host's state as
	// much as sllbrd's; the bound still fails the designs issue 11 replaced
	// (a 100 ms debounce: 114-131 ms; polling: about 1.1 s).
	latencyBound = 2 * latencyGoal
	// minApplyInterval and maxApplyInterval are the reconcile loop's
	// defaults: during a burst the interval between applies doubles from
	// the first to the second (internal/reconcile/spacing.go).
	minApplyInterval = 50 * time.Millisecond
	maxApplyInterval = time.Second
	// singleWrites is how many isolated writes give a latency median.
	singleWrites = 21
	// burstWrites are written within burstSpan.
	burstWrites = 1000
	burstSpan   = time.Second
)

// applyLatencies are the latencies of a series of single writes: as the
// apply-latency histogram recorded each (from the source's first event to
// the dataplane applied), and as the test saw it (from the write returning
// to the applied generation showing in the metrics, polled without pause).
type applyLatencies struct {
	histogram, external []time.Duration
}

// histogramTotals returns the count and sum of sllbrd_config_apply_latency_seconds.
func histogramTotals(t testing.TB, inst *e2e.Instance) (count, sum float64) {
	t.Helper()
	count = metric(t, inst, "sllbrd_config_apply_latency_seconds_count")
	sum = metric(t, inst, "sllbrd_config_apply_latency_seconds_sum")
	return count, sum
}

func metric(t testing.TB, inst *e2e.Instance, name string) float64 {
	t.Helper()
	v, ok, err := inst.Metric(name)
	if err != nil || !ok {
		t.Fatalf("%s: found %v, err %v", name, ok, err)
	}
	return v
}

// waitGenerationAbove polls (without pause) until inst reports a generation
// above gen applied, and returns it.
func waitGenerationAbove(t testing.TB, inst *e2e.Instance, gen float64, timeout time.Duration) float64 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v, ok, err := inst.Metric("sllbrd_config_last_applied_generation")
		if err == nil && ok && v > gen {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("no generation above %v applied within %v (last %v, found %v, err %v)", gen, timeout, v, ok, err)
		}
	}
}

// measureSingleWrites makes n writes, write(i) each changing the state,
// waits for each to be applied and for the loop's minimum interval to
// pass, so that every write is a single change, and returns the latencies.
func measureSingleWrites(t testing.TB, inst *e2e.Instance, n int, write func(i int)) applyLatencies {
	t.Helper()
	var lat applyLatencies
	for i := range n {
		gen := metric(t, inst, "sllbrd_config_last_applied_generation")
		count, sum := histogramTotals(t, inst)
		write(i)
		written := time.Now()
		waitGenerationAbove(t, inst, gen, 10*time.Second)
		lat.external = append(lat.external, time.Since(written))
		count2, sum2 := histogramTotals(t, inst)
		if count2 != count+1 {
			t.Fatalf("write %d: %v applies of a change recorded, want 1", i, count2-count)
		}
		lat.histogram = append(lat.histogram, time.Duration((sum2-sum)*float64(time.Second)))
		time.Sleep(2 * minApplyInterval) // isolate the next write from this apply
	}
	return lat
}

// distribution describes sorted latencies: min, quartiles, max.
func distribution(d []time.Duration) string {
	s := slices.Clone(d)
	slices.Sort(s)
	q := func(f float64) time.Duration { return s[int(f*float64(len(s)-1))].Round(100 * time.Microsecond) }
	return fmt.Sprintf("min %v p25 %v median %v p75 %v max %v", q(0), q(0.25), q(0.5), q(0.75), q(1))
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// check logs the latencies and whether their medians meet latencyGoal,
// and fails unless both are under latencyBound. The external one includes
// up to one metrics poll through the lab's namespace (logged), so it
// bounds the histogram's from above.
func (lat applyLatencies) check(t *testing.T, what string, inst *e2e.Instance) {
	t.Helper()
	t.Log(lat.report(t, what, inst))
	if m := median(lat.histogram); m >= latencyBound {
		t.Errorf("%s: median apply latency (histogram) %v, want under %v", what, m, latencyBound)
	}
	if m := median(lat.external); m >= latencyBound {
		t.Errorf("%s: median write-to-applied time %v, want under %v", what, m, latencyBound)
	}
}

// report describes the latencies and says whether their medians meet
// latencyGoal.
func (lat applyLatencies) report(t testing.TB, what string, inst *e2e.Instance) string {
	t.Helper()
	start := time.Now()
	metric(t, inst, "sllbrd_config_last_applied_generation")
	poll := time.Since(start).Round(100 * time.Microsecond)
	verdict := "meets"
	if max(median(lat.histogram), median(lat.external)) >= latencyGoal {
		verdict = "DOES NOT MEET"
	}
	return fmt.Sprintf("%s, %d single writes (one metrics poll takes %v):\n  histogram: %s\n  external:  %s\n"+
		"  medians %v (histogram) and %v (external): %s the goal of %v", what, len(lat.histogram), poll,
		distribution(lat.histogram), distribution(lat.external), median(lat.histogram).Round(100*time.Microsecond),
		median(lat.external).Round(100*time.Microsecond), verdict, latencyGoal)
}

// burstResult is what a burst of writes cost.
type burstResult struct {
	writes        int
	took, window  time.Duration // writing; first write to the last apply seen
	spaced        int           // applies the loop's spacing rule makes for the writes' completion times (reconcile.ApplyTimes)
	loopSpaced    int           // applies the spacing rule makes for the changes as the source handed them to the loop
	changed       int           // changes the source handed to the loop (logged "configuration changed")
	changeApplies float64       // applies of a change (histogram count)
	applies       float64       // every successful apply (incl. deferred route retirement)
	generations   float64
	applied       []string // when sllbrd logged each apply, from the first write, with the generation
}

// writeTimes records when each write of a burst completed; writers call
// wrote after each write returns.
type writeTimes struct {
	mu sync.Mutex
	at []time.Time
}

func (w *writeTimes) wrote() {
	w.mu.Lock()
	w.at = append(w.at, time.Now())
	w.mu.Unlock()
}

// burst makes burstWrites writes spread over burstSpan (write(i) each
// changing the state), then final(), waits until sllbrd has applied
// everything and stays quiet, and returns what it cost. The writes record
// their completion in times.
func burst(t *testing.T, inst *e2e.Instance, times *writeTimes, write func(i int), final func()) burstResult {
	t.Helper()
	applies0 := metric(t, inst, `sllbrd_config_apply_total{result="success"}`)
	count0, _ := histogramTotals(t, inst)
	gen0 := metric(t, inst, "sllbrd_config_last_applied_generation")
	times.mu.Lock()
	times.at = nil // the burst's writes only
	times.mu.Unlock()
	start := time.Now()
	for i := range burstWrites {
		if wait := time.Until(start.Add(time.Duration(i) * burstSpan / burstWrites)); wait > 0 {
			time.Sleep(wait) // pace the writes over the span
		}
		write(i)
	}
	final()
	took := time.Since(start)
	lastApply := waitQuiet(t, inst, 20*time.Second)
	r := burstResult{writes: burstWrites + 1, took: took, window: lastApply.Sub(start)}
	times.mu.Lock()
	r.spaced = len(reconcile.ApplyTimes(times.at))
	times.mu.Unlock()
	count1, _ := histogramTotals(t, inst)
	r.changeApplies = count1 - count0
	r.applies = metric(t, inst, `sllbrd_config_apply_total{result="success"}`) - applies0
	r.generations = metric(t, inst, "sllbrd_config_last_applied_generation") - gen0
	var changed []time.Time
	for _, e := range logged(t, inst, start) {
		switch e.Msg {
		case "dataplane programmed":
			r.applied = append(r.applied, fmt.Sprintf("%v:g%d", e.Time.Sub(start).Round(time.Millisecond), e.Generation))
		case "configuration changed":
			changed = append(changed, e.Time)
		}
	}
	r.changed, r.loopSpaced = len(changed), len(reconcile.ApplyTimes(changed))
	return r
}

// logEntry is a line of sllbrd's JSON log.
type logEntry struct {
	Time       time.Time `json:"time"`
	Msg        string    `json:"msg"`
	Generation uint64    `json:"generation"`
}

// logged returns what sllbrd logged since start.
func logged(t *testing.T, inst *e2e.Instance, start time.Time) []logEntry {
	t.Helper()
	return logJSON(t, inst, func(e logEntry) bool { return !e.Time.Before(start) })
}

// logJSON returns the lines of inst's log (one JSON record each) decoded
// into T that keep accepts, in order; lines that do not decode are skipped.
func logJSON[T any](t *testing.T, inst *e2e.Instance, keep func(T) bool) []T {
	t.Helper()
	b, err := os.ReadFile(inst.Proc.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	for line := range strings.Lines(string(b)) {
		var r T
		if json.Unmarshal([]byte(line), &r) == nil && keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// waitQuiet waits until inst is ready and has applied no change for longer
// than the loop's widest interval (a change still pending at the end of a
// burst waits up to maxApplyInterval), and returns when the last change was
// seen applied.
func waitQuiet(t *testing.T, inst *e2e.Instance, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last, lastAt := -1.0, time.Now()
	for {
		count, _ := histogramTotals(t, inst)
		if count != last {
			last, lastAt = count, time.Now()
		}
		status, _, err := inst.Get("/readyz")
		if err == nil && status == 200 && time.Since(lastAt) > maxApplyInterval+500*time.Millisecond {
			return lastAt
		}
		if time.Now().After(deadline) {
			t.Fatalf("sllbrd still applying or not ready %v after a burst (readyz %d, err %v)", timeout, status, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// burstSlack allows for the loop running at other times than the spacing
// rule replayed on its inputs (reconcile.ApplyTimes, with applies taking no
// time): a wake-up delayed on a loaded machine, or an apply that outlasts
// the interval, makes an apply take up other changes than in the replay,
// and so the interval widens or narrows at other times.
const burstSlack = 3

// check logs the burst's cost and fails if the loop applied more changes
// than its spacing rule makes for the changes the source handed to it, plus
// burstSlack, or if the changes sllbrd logged are not the generations it
// applied. What the rule makes for the writes' own times is logged: the
// source hands the loop a change whenever the writes pause for its quiet
// period, so on a loaded machine, where the writer and the source are
// starved for tens of milliseconds at a time, the loop sees quiet periods
// the writes' times do not show (on 2026-11-26, with two busy loops beside
// the test: 7 to 17 applies where the writes' times made 7, and exactly as
// many as the rule made for the changes handed over).
func (r burstResult) check(t *testing.T, what string) {
	t.Helper()
	bound := float64(r.loopSpaced + burstSlack)
	t.Logf("%s: %d writes in %v: %v applies of a change (%v generations; %v applies in all, with deferred route "+
		"retirements) until quiet %v after the first write; the spacing rule makes %d for the %d changes handed to "+
		"the loop (bound %v) and %d for the writes' times", what, r.writes, r.took.Round(time.Millisecond),
		r.changeApplies, r.generations, r.applies, r.window.Round(time.Millisecond), r.loopSpaced, r.changed, bound, r.spaced)
	if float64(r.changed) != r.generations {
		t.Errorf("%s: sllbrd logged %d configuration changes, and the applied generation rose by %v", what, r.changed, r.generations)
	}
	if r.changeApplies > bound {
		t.Errorf("%s: %v applies of a change within %v, want at most %v (interval doubling from %v to %v while "+
			"changes keep coming); applies logged: %v", what, r.changeApplies, r.window, bound,
			minApplyInterval, maxApplyInterval, r.applied)
	}
}

// t2Ready is the lab's service-a with t2's readiness set.
func t2Ready(ready bool) e2e.Config {
	return e2e.Config{Services: []e2e.Service{{Name: "service-a", Targets: []int{1, 2, 3}, Ready: map[int]bool{2: ready}}},
		Routes: webRoute}
}

// TestIntegrationFileEditLatency: with the manifest file source, every
// single edit (atomic rename, as e2e.Write does) reaches the dataplane as
// one apply, in a median under latencyBound by the apply-latency histogram
// and as seen from outside (whether it meets latencyGoal is logged); a
// burst of 1,000 edits in a second costs no more applies than the loop's
// spacing rule makes for the changes the source hands it, and the last
// edit wins.
func TestIntegrationFileEditLatency(t *testing.T) {
	l := labSetup(t, 1)
	dir, insts := startSllbrd(t, l, allTargets, webRoute, 1)
	inst := insts[0]
	o := lab.FlowOptions{VIP: vip4, Port: 5002, Count: 100}
	base := flows(t, l, o)
	var times writeTimes
	write := func(ready bool) {
		if err := e2e.Write(dir, t2Ready(ready)); err != nil {
			t.Fatal(err)
		}
		times.wrote()
	}
	measureSingleWrites(t, inst, singleWrites, func(i int) { write(i%2 == 1) }).check(t, "file source", inst)
	burst(t, inst, &times, func(i int) { write(i%2 == 1) }, func() { write(true) }).check(t, "file source burst")
	if after := flows(t, l, o); !maps.Equal(base, after) {
		t.Errorf("after the burst ending with t2 ready, %d of %d flows reach another target", differing(base, after), len(base))
	}
}

// BenchmarkIntegrationFileEditLatency measures issue 11's goal for the
// manifest file source: b.N single edits, as TestIntegrationFileEditLatency
// makes them, each applied before the next; it reports the medians from
// the write to the dataplane (apply-latency histogram and as seen from
// outside) in ms and logs whether they meet latencyGoal. ns/op includes the
// pause between edits and means nothing. make bench-latency runs it.
func BenchmarkIntegrationFileEditLatency(b *testing.B) {
	l := labWith(b, lab.Options{LBs: 1, Targets: 3, Logger: b})
	dir, insts := startSllbrd(b, l, allTargets, webRoute, 1)
	lat := measureSingleWrites(b, insts[0], b.N, func(i int) {
		if err := e2e.Write(dir, t2Ready(i%2 == 1)); err != nil {
			b.Fatal(err)
		}
	})
	b.ReportMetric(float64(median(lat.histogram).Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(median(lat.external).Microseconds())/1000, "ms-median-external")
	b.Log(lat.report(b, "file source", insts[0]))
}

// t2v4ReadyPath locates t2's endpoint in service-a's IPv4 EndpointSlice: the JSON
// patch path of its readiness.
func (k *kubeLab) t2v4ReadyPath(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := k.kube.DiscoveryV1().EndpointSlices(kubeNamespace).Get(ctx, t2Endpoints[0].slice, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(s.Endpoints, func(e discoveryv1.Endpoint) bool {
		return slices.Contains(e.Addresses, t2Endpoints[0].addr)
	})
	if i < 0 {
		t.Fatalf("EndpointSlice %s has no endpoint %s", t2Endpoints[0].slice, t2Endpoints[0].addr)
	}
	return fmt.Sprintf("/endpoints/%d/conditions/ready", i)
}

// patchT2v4 returns a function that writes t2's IPv4 readiness with one
// JSON patch, through a client without rate limit.
func (k *kubeLab) patchT2v4(t *testing.T) func(ready bool) {
	cfg := k.cp.AdminConfig()
	cfg.QPS = -1 // no client-side rate limit: the burst is the server's
	client := kubernetes.NewForConfigOrDie(cfg).DiscoveryV1().EndpointSlices(kubeNamespace)
	path := k.t2v4ReadyPath(t)
	return func(ready bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		patch := fmt.Sprintf(`[{"op":"replace","path":%q,"value":%v}]`, path, ready)
		if _, err := client.Patch(ctx, t2Endpoints[0].slice, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Errorf("patch %s: %v", t2Endpoints[0].slice, err)
		}
	}
}

// checkWriteLatency: every single API write reaches the dataplane as one
// apply, in a median under latencyBound by the apply-latency histogram and
// as seen from outside (whether under latencyGoal is logged).
// t2 starts and ends not ready in the IPv4 slice.
func (k *kubeLab) checkWriteLatency(t *testing.T) {
	patch := k.patchT2v4(t)
	measureSingleWrites(t, k.inst, singleWrites+1, func(i int) { patch(i%2 == 0) }).check(t, "API source", k.inst)
}

// checkWriteBurst: 1,000 API writes spread over a second (as many as the
// server takes; 16 writers) cost no more applies than the loop's spacing rule
// makes for the changes the source hands it (burstResult.check). t2 ends not
// ready in the IPv4 slice, as it started.
func (k *kubeLab) checkWriteBurst(t *testing.T) {
	patch := k.patchT2v4(t)
	tickets := make(chan bool)
	var times writeTimes
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for ready := range tickets {
				patch(ready)
				times.wrote()
			}
		})
	}
	burst(t, k.inst, &times, func(i int) { tickets <- i%2 == 0 }, func() {
		close(tickets)
		wg.Wait()
		patch(false)
		times.wrote()
	}).check(t, "API source burst")
}
