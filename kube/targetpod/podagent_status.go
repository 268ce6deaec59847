package targetpod

import (
	"context"
	"fmt"
	"time"

	"github.com/sllbrd/sllbrd/kube"
)

// status returns the status annotation value to write ("": remove it);
// known is false when there is nothing to say yet, refusing when the pod
// is not this agent's. The value describes the last apply outcome, never
// the time between a new desired generation and its outcome: a node-mode
// pod's endpoint is ready only while the status says ready, so a new
// generation must not make it flap to ready: false before it is applied.
// It changes with outcomes, parse problems and refusals only.
func (a *PodAgent) status() (value string, known, refusing bool) {
	a.mu.Lock()
	o, parseErr, refused, report := a.outcome, a.parseErr, a.refused, a.reportRefusal
	a.mu.Unlock()
	if refused != "" {
		if !report {
			return "", false, true
		}
		msg := refused
		if o != nil {
			msg += fmt.Sprintf("; what this %s applied before (generation %d) stays in place, neither changed nor removed", a.who(), o.Generation)
		}
		return Status{Version: SchemaVersion, Agent: a.id, Errors: []string{msg}}.Marshal(), true, true
	}
	if o == nil && parseErr == nil {
		return "", false, false // nothing applied yet: nothing to say
	}
	if o == nil {
		// Nothing applied by this agent, and nothing will be until the
		// annotation is valid: say so, as the pod may still carry an
		// earlier agent's status, ready.
		s := Status{Version: SchemaVersion, Agent: a.id, Errors: []string{"annotation " + kube.AnnotationTargetNetwork +
			" is invalid; nothing applied since this " + a.who() + " started, what an earlier one applied stays: " + parseErr.Error()}}
		return s.Marshal(), true, false
	}
	s := StatusOf(o.Generation, o.Result, o.Err)
	s.Agent = a.id
	if parseErr != nil {
		s.Ready = false
		s.Errors = append(s.Errors, "annotation "+kube.AnnotationTargetNetwork+" is invalid, the last valid configuration stays: "+parseErr.Error())
	}
	// Generation 0 is the removal (no desired annotation): nothing wanted.
	if o.Generation == 0 && parseErr == nil && len(s.Gateways) == 0 && len(s.Errors) == 0 {
		return "", true, false // nothing wanted, nothing left
	}
	return s.Marshal(), true, false
}

// mayWrite reports whether this agent may replace current (the status on
// the pod, not "") with value. The pod's own agent writes its status
// whatever was there, but removes only its own; an agent the pod does not
// name (refusing) writes only where no other agent has written. So two
// agents never write the same pod in turn: a sidecar in a node-mode pod
// leaves the node daemon's status alone, and either leaves the other's
// refusal of an unknown mode.
func (a *PodAgent) mayWrite(value, current string, refusing bool) bool {
	if current == "" {
		return true
	}
	if !refusing && value != "" {
		return true
	}
	s, err := ParseStatus(current)
	if err != nil {
		return true // not a status: nobody's
	}
	return s.Agent == a.id || (s.Agent == "" && a.mode == kube.TargetAgentSidecar) // "": a sidecar older than the field
}

// writeStatus keeps the pod's status annotation up to date until ctx ends.
func (a *PodAgent) writeStatus(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.kick:
		case <-retry.C:
		}
		value, known, refusing := a.status()
		a.mu.Lock()
		current, gone := a.onPod, a.podGone || !a.podSeen
		a.mu.Unlock()
		if !known || gone || value == current || !a.mayWrite(value, current, refusing) {
			continue
		}
		err := a.write(ctx, value)
		if ctx.Err() != nil {
			return
		}
		a.metrics.ObserveStatusWrite(err)
		if err != nil {
			failures++
			wait := min(watchBackoff[0]<<min(failures-1, 10), watchBackoff[1])
			a.log.Warn("writing the status annotation failed; retrying", "err", err, "retry_in", wait)
			retry.Reset(wait)
			continue
		}
		failures = 0
		a.mu.Lock()
		a.onPod = value
		a.mu.Unlock()
	}
}
