package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/liveness"
	"github.com/sllbrd/sllbrd/model"
)

// The rate limit of liveness Events (docs/liveness.md): at most one per
// endpoint (Service and address) per eventPerEndpoint, and at most
// eventBurst at once, refilled at eventBurst per eventPerEndpoint, for the
// whole SLLBR (an SLLBR whose own link breaks finds every endpoint dead at
// once). What the limit leaves out is counted (sllbrd_liveness_events_total
// {result="rate_limited"}) and still in the prober's log line, sllbrd show and
// the metrics.
const (
	eventPerEndpoint = time.Minute
	eventBurst       = 20
)

// Event reasons and action of the liveness Events.
const (
	reasonEndpointDead  = "EndpointDead"
	reasonEndpointAlive = "EndpointAlive"
	eventActionProbe    = "Probe"
)

// livenessReport is one endpoint's transition, to report; config.Probe
// says which probe found it, and for BFD cause and diag why it is dead.
type livenessReport struct {
	change  liveness.Change
	service string
	id      int
	config  model.Liveness
	cause   bfdCause
	diag    bfd.Diag
}

// livenessEvent is one report that passed the rate limit.
type livenessEvent struct {
	warning bool // dead (a Warning Event) or alive (Normal)
	reason  string
	service string
	addr    netip.Addr
	note    string
}

// eventKey is what one Event per eventPerEndpoint is allowed for.
type eventKey struct {
	service string
	addr    netip.Addr
}

// livenessEvents reports endpoint transitions, rate-limited, through sink
// (a Kubernetes Event recorder with an API server, the log without one).
// report never blocks: the sink runs on run's goroutine.
type livenessEvents struct {
	sink     func(context.Context, livenessEvent)
	instance string // this SLLBR, named in the notes
	now      func() time.Time
	queue    chan livenessEvent

	mu       sync.Mutex
	last     map[eventKey]time.Time // of the last Event of each endpoint, within eventPerEndpoint
	tokens   float64
	refilled time.Time

	recorded, limited atomic.Uint64
}

func newLivenessEvents(instance string, now func() time.Time, sink func(context.Context, livenessEvent)) *livenessEvents {
	return &livenessEvents{sink: sink, instance: instance, now: now, queue: make(chan livenessEvent, eventBurst),
		last: map[eventKey]time.Time{}, tokens: eventBurst, refilled: now()}
}

// report passes each transition that the rate limit allows to the sink.
func (r *livenessEvents) report(reports []livenessReport) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refill(now)
	for _, rep := range reports {
		k := eventKey{rep.service, rep.change.Addr}
		if at, ok := r.last[k]; (ok && now.Sub(at) < eventPerEndpoint) || r.tokens < 1 {
			r.limited.Add(1)
			continue
		}
		select {
		case r.queue <- r.event(rep):
			r.tokens--
			r.last[k] = now
			r.recorded.Add(1)
		default: // cannot happen while the queue holds eventBurst
			r.limited.Add(1)
		}
	}
}

// refill adds the tokens earned since the last refill and forgets the
// endpoints whose last Event is old enough. Called with r.mu held.
func (r *livenessEvents) refill(now time.Time) {
	r.tokens = min(eventBurst, r.tokens+eventBurst*now.Sub(r.refilled).Seconds()/eventPerEndpoint.Seconds())
	r.refilled = now
	for k, at := range r.last {
		if now.Sub(at) >= eventPerEndpoint {
			delete(r.last, k)
		}
	}
}

// event writes a report as an Event.
func (r *livenessEvents) event(rep livenessReport) livenessEvent {
	c := rep.change
	ev := livenessEvent{warning: !c.Alive, reason: reasonEndpointDead, service: rep.service, addr: c.Addr}
	if c.Alive {
		ev.reason = reasonEndpointAlive
	}
	what := fmt.Sprintf("SLLBR %s: endpoint %s (identifier %d)", r.instance, c.Addr, rep.id)
	took := c.Detection.Round(time.Millisecond)
	switch {
	case rep.config.Probe == model.ProbeBFD:
		ev.note = bfdNote(what, rep, took)
	case c.Alive:
		ev.note = fmt.Sprintf("%s answers ICMP echo again, for %v now (liveness %s): it takes back its share of new flows on this SLLBR",
			what, took, rep.config)
	default:
		ev.note = fmt.Sprintf("%s did not answer ICMP echo for %v (liveness %s): this SLLBR sends it no new flows until it answers for the hold-down",
			what, took, rep.config)
	}
	return ev
}

// bfdNote is the note of a transition found by BFD.
func bfdNote(what string, rep livenessReport, took time.Duration) string {
	const until = "this SLLBR sends it no new flows until its BFD session is Up for the hold-down"
	switch {
	case rep.change.Alive:
		return fmt.Sprintf("%s: its BFD session has been Up for %v now (liveness %s): it takes back its share of new flows on this SLLBR",
			what, took, rep.config)
	case rep.cause == bfdNeverUp:
		return fmt.Sprintf("%s: no BFD session came up with the target side in %v (liveness %s; is `sllbrd target` running for the pod, with UDP 3784 open?): %s",
			what, took, rep.config, until)
	}
	return fmt.Sprintf("%s: its BFD session went down (%s) (liveness %s): %s", what, rep.diag, rep.config, until)
}

// run hands the allowed Events to the sink until ctx ends.
func (r *livenessEvents) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-r.queue:
			r.sink(ctx, ev)
		}
	}
}

// counts returns the Events recorded and left out by the rate limit.
func (r *livenessEvents) counts() (recorded, limited uint64) {
	return r.recorded.Load(), r.limited.Load()
}

// logSink is the sink without an API server: one log line per Event.
func logSink(log *slog.Logger) func(context.Context, livenessEvent) {
	return func(ctx context.Context, ev livenessEvent) {
		level := slog.LevelInfo
		if ev.warning {
			level = slog.LevelWarn
		}
		log.Log(ctx, level, "endpoint liveness", "reason", ev.reason, "service", ev.service, "note", ev.note)
	}
}
