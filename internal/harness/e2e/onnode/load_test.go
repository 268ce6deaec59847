package onnode

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// load is traffic that runs while an operation happens: long-lived TCP
// connections to both VIPs (each exchanging a line every 50 ms), and new
// UDP request/reply flows to both VIPs, 4 every 50 ms, each tried once.
type load struct {
	e       *env
	streams []*lab.Streams
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	sent    int
	lost    []time.Time // when each unanswered flow was sent
	start   time.Time
}

// loadStreams is the number of long-lived connections per VIP.
const loadStreams = 16

// startLoad opens the connections and starts the flows.
func (e *env) startLoad() *load {
	e.t.Helper()
	l := &load{e: e, done: make(chan struct{}), start: time.Now()}
	for _, vip := range vips {
		s, err := e.lab.OpenStreams(e.ctx, lab.StreamOptions{VIP: vip, Port: echoPort, Count: loadStreams})
		if err != nil {
			l.closeStreams()
			e.t.Fatal(err)
		}
		l.streams = append(l.streams, s)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	l.cancel = cancel
	go l.flows(ctx)
	return l
}

func (l *load) flows(ctx context.Context) {
	defer close(l.done)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		vip := vips[i%len(vips)]
		const n = 4
		t0 := time.Now()
		got, _ := l.e.lab.Flows(ctx, lab.FlowOptions{VIP: vip, Port: udpPort, Proto: "udp", Count: n, Attempts: 1, Timeout: 500 * time.Millisecond, Parallel: n})
		if ctx.Err() != nil {
			return // a flow cut short by the end of the load is no loss
		}
		l.mu.Lock()
		l.sent += n
		for range n - len(got) {
			l.lost = append(l.lost, t0)
		}
		l.mu.Unlock()
	}
}

func (l *load) closeStreams() []lab.StreamStats {
	var out []lab.StreamStats
	for _, s := range l.streams {
		out = append(out, s.Close()...)
	}
	return out
}

// loadResult is what an operation cost the traffic.
type loadResult struct {
	flows, lost int
	lostSpan    time.Duration // from the first lost flow to the last
	streams     int
	broken      []string // the connections that broke, and why
	exchanges   int
}

func (r loadResult) String() string {
	s := fmt.Sprintf("UDP flows lost %d of %d", r.lost, r.flows)
	if r.lost > 0 {
		s += fmt.Sprintf(" (within %v)", r.lostSpan.Round(time.Millisecond))
	}
	return s + fmt.Sprintf("; TCP connections broken %d of %d (%d exchanges)", len(r.broken), r.streams, r.exchanges)
}

// stop ends the load and returns what was lost.
func (l *load) stop() loadResult {
	l.cancel()
	<-l.done
	stats := l.closeStreams()
	l.mu.Lock()
	defer l.mu.Unlock()
	r := loadResult{flows: l.sent, lost: len(l.lost), streams: len(stats)}
	if len(l.lost) > 0 {
		r.lostSpan = l.lost[len(l.lost)-1].Sub(l.lost[0])
	}
	for _, s := range stats {
		r.exchanges += s.Exchanges
		if s.Err != nil {
			r.broken = append(r.broken, fmt.Sprintf("%s (on %s): %v", s.Flow, s.Target, s.Err))
		}
	}
	return r
}
