package soak

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// Sample is one probe's outcome (see the package doc for the kinds).
type Sample struct {
	At     time.Time     // when the probe or exchange was sent
	Kind   string        // "udp4", "tcp6", "frag4", "ping6", "stream4", ...
	Flow   string        // the fixed flow's identity; "" for kinds with a new flow per probe
	Target string        // who answered; "" when unknown (pings) or not answered
	RTT    time.Duration // time to the answer, or waited before giving up
	Err    string        // "" means answered
}

// Failed reports whether the sample was not answered (a probe's loss or a
// stream's break).
func (s Sample) Failed() bool { return s.Err != "" }

// isStream reports whether kind is a long-lived stream (stalls and breaks,
// not loss runs).
func isStream(kind string) bool { return strings.HasPrefix(kind, "stream") }

// tracksMoves reports whether a fixed flow of kind must keep its target.
func tracksMoves(kind string) bool {
	return strings.HasPrefix(kind, "udp") || strings.HasPrefix(kind, "frag")
}

// Recorder collects samples from many goroutines. The zero value is ready.
type Recorder struct {
	mu      sync.Mutex
	samples []Sample
}

// Add records one sample.
func (r *Recorder) Add(s Sample) {
	r.mu.Lock()
	r.samples = append(r.samples, s)
	r.mu.Unlock()
}

// Samples returns a copy of the samples, sorted by At (stable: samples with
// the same At keep the order they were added in).
func (r *Recorder) Samples() []Sample {
	r.mu.Lock()
	out := slices.Clone(r.samples)
	r.mu.Unlock()
	sortSamples(out)
	return out
}

// Len is the number of samples recorded.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.samples)
}

func sortSamples(s []Sample) {
	slices.SortStableFunc(s, func(a, b Sample) int { return a.At.Compare(b.At) })
}
