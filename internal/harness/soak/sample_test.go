package soak

import (
	"sync"
	"testing"
	"time"
)

func TestRecorder(t *testing.T) {
	var r Recorder
	t0 := time.Unix(1000, 0)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				// Reverse time order per goroutine, so Samples must sort.
				r.Add(Sample{At: t0.Add(time.Duration(100-i) * time.Millisecond), Kind: "udp4", Flow: string(rune('a' + g))})
			}
		})
	}
	wg.Wait()
	if r.Len() != 800 {
		t.Fatalf("Len = %d, want 800", r.Len())
	}
	got := r.Samples()
	if len(got) != 800 {
		t.Fatalf("Samples has %d, want 800", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i].At.Before(got[i-1].At) {
			t.Fatalf("sample %d at %v before sample %d at %v", i, got[i].At, i-1, got[i-1].At)
		}
	}
	got[0].Kind = "changed"
	if r.Samples()[0].Kind != "udp4" {
		t.Error("Samples returned the recorder's own slice, not a copy")
	}
}

func TestRecorderStable(t *testing.T) {
	var r Recorder
	t0 := time.Unix(1000, 0)
	r.Add(Sample{At: t0.Add(time.Second), Flow: "late"})
	r.Add(Sample{At: t0, Flow: "first"})
	r.Add(Sample{At: t0, Flow: "second"})
	got := r.Samples()
	for i, want := range []string{"first", "second", "late"} {
		if got[i].Flow != want {
			t.Errorf("sample %d is %q, want %q (same At keeps the order of Add)", i, got[i].Flow, want)
		}
	}
}
