package main

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// The liveness of the BFD lab tests: the defaults (labInterval × 4,
// labHoldDown), probed by BFD.
const (
	bfdAnnotation = "interval=200ms,multiplier=4,hold-down=5s,probe=bfd"
	// bfdBackSlack is how much longer than the hold-down a target's flows
	// may take to return: its session comes Up again first, at most one
	// packet a second each way while it is not Up (RFC 5880 section
	// 6.8.3).
	bfdBackSlack = 3 * time.Second
)

// bfdPeer is a BFD target side played by the test: package bfd in a
// target's namespace with one session to the SLLBR (lb1) per family, with
// the timing of bfdAnnotation.
type bfdPeer struct {
	srv     *bfd.Server
	cancel  context.CancelFunc
	done    chan error
	stopped sync.Once
}

// startBFDPeer starts target i's peer.
func startBFDPeer(t *testing.T, l *lab.Lab, i int) *bfdPeer {
	t.Helper()
	p := &bfdPeer{srv: bfd.NewServer(), done: make(chan error, 1)}
	lb, tg := lab.LBTargetSide(1), lab.TargetAddrs(i)
	for _, pair := range [][2]netip.Addr{{lb.V4.Addr(), tg.V4.Addr()}, {lb.V6.Addr(), tg.V6.Addr()}} {
		err := p.srv.Add(bfd.SessionConfig{Peer: pair[0], Local: pair[1], Interface: lab.TargetLink,
			DesiredMinTx: labInterval, RequiredMinRx: labInterval, DetectMultiplier: uint8(labDetection / labInterval)})
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() { p.done <- l.Do(lab.TargetName(i), func() error { return p.srv.Run(ctx) }) }()
	t.Cleanup(func() { p.stop(t, false) })
	return p
}

// stop ends the peer: gracefully (its sessions go AdminDown, as a target
// side that stops), or abruptly (it falls silent, as a frozen one). It may
// be called again.
func (p *bfdPeer) stop(t *testing.T, graceful bool) {
	p.stopped.Do(func() {
		if graceful {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := p.srv.Shutdown(ctx); err != nil {
				t.Errorf("BFD peer shutdown: %v", err)
			}
		}
		p.cancel()
		if err := <-p.done; err != nil {
			t.Errorf("BFD peer: %v", err)
		}
	})
}

// TestIntegrationLivenessBFDPeer: the SLLBR side of probe=bfd on the real
// kernel, both families, one SLLBR from manifests, its target sides played
// by package bfd in the targets' namespaces (t1 and t2; t3 has none). t3
// is dead after the start grace, the Event saying no BFD session came up;
// a target side that falls silent is dead within the detection time and
// only its flows move; restarted, its flows return after the hold-down; a
// target side that stops on purpose (AdminDown) leaves its target alive.
func TestIntegrationLivenessBFDPeer(t *testing.T) {
	l := dataplaneLab(t, 1, dataplaneKernel)
	dir, insts := startSllbrd(t, l, allTargets, webRoute, 1)
	inst := insts[0]
	peers := map[int]*bfdPeer{1: startBFDPeer(t, l, 1), 2: startBFDPeer(t, l, 2)}
	if err := annotateService(dir, "service-a", bfdAnnotation); err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, inst, 2)
	probedAt := time.Now()
	waitAlive(t, inst, "t3", false)
	grace := labDetection + 3*time.Second
	if took := time.Since(probedAt); took < grace-100*time.Millisecond || took > grace+2*time.Second {
		t.Errorf("t3 (no target side) dead %v after probe=bfd applied, want the start grace %v", took, grace)
	} else {
		t.Logf("t3 (no target side) dead %v after probe=bfd applied (start grace %v)", took.Round(time.Millisecond), grace)
	}
	waitSessionsUp(t, inst, 1, 2)
	waitAlive(t, inst, "t2", true)
	checkCause(t, inst, "never_up", 2)

	served := baselineFlows(t, l, 48000)
	s := startStream(t, l, streamFlowsOf(served, "t2", 12), 5000)
	time.Sleep(300 * time.Millisecond)
	silentAt := time.Now()
	peers[2].stop(t, false)
	tls := waitTimelines(t, s, "t2", silentAt, time.Time{}, 5*time.Second, func(tl timeline) bool { return !tl.allMoved.IsZero() })
	checkExplained(t, inst, s, tls)
	time.Sleep(time.Second)
	backAt := time.Now()
	peers[2] = startBFDPeer(t, l, 2)
	checkReturn(t, s, "BFD peer silent", silentAt, 0, backAt, bfdBackSlack, 0)
	checkCause(t, inst, "session_down", 2)

	// A target side that stops on purpose (AdminDown: restarting, upgraded)
	// is no failure of its target: t2 stays alive on the API's word, its
	// flows stay, and its sessions come Up again with the new target side.
	peers[2].stop(t, true) // Shutdown returns once its AdminDown packets are sent
	stoppedAt := time.Now()
	waitFor(t, 5*time.Second, "t2's sessions stopped by its target side", func() bool {
		v, _, err := inst.Metric(`sllbrd_liveness_bfd_peer_stopped_total`)
		return err == nil && v == 2
	})
	for time.Since(stoppedAt) < 2*labDetection+time.Second {
		for _, a := range []netip.Addr{lab.TargetAddrs(2).V4.Addr(), lab.TargetAddrs(2).V6.Addr()} {
			if v, found, err := inst.Metric(fmt.Sprintf(`sllbrd_endpoint_alive{address="%s"`, a)); err != nil || !found || v != 1 {
				t.Fatalf("%v after t2's target side stopped: %s alive %v (found %v, %v), want alive", time.Since(stoppedAt), a, v, found, err)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	peers[2] = startBFDPeer(t, l, 2)
	waitSessionsUp(t, inst, 2)
	waitAlive(t, inst, "t2", true)
	checkCause(t, inst, "session_down", 2)
	t.Logf("t2's target side stopped (AdminDown) and restarted: t2 alive throughout (%v)", time.Since(stoppedAt).Round(time.Millisecond))
	checkBFDNotes(t, inst)
}

// waitSessionsUp waits until inst's BFD sessions with the targets'
// addresses are up.
func waitSessionsUp(t *testing.T, inst *e2e.Instance, targets ...int) {
	t.Helper()
	waitFor(t, 15*time.Second, "the BFD sessions up", func() bool {
		for _, i := range targets {
			if !sessionUp(t, inst, lab.TargetAddrs(i).V4.Addr()) || !sessionUp(t, inst, lab.TargetAddrs(i).V6.Addr()) {
				return false
			}
		}
		return true
	})
}

// sessionUp reports whether inst's BFD session with addr is up.
func sessionUp(t *testing.T, inst *e2e.Instance, addr netip.Addr) bool {
	v, found, err := inst.Metric(fmt.Sprintf(`sllbrd_liveness_bfd_session_up{address="%s"}`, addr))
	if err != nil {
		t.Fatal(err)
	}
	return found && v == 1
}

// checkCause: inst counted n BFD-probed addresses dead for cause.
func checkCause(t *testing.T, inst *e2e.Instance, cause string, n float64) {
	t.Helper()
	if v, _, err := inst.Metric(`sllbrd_liveness_bfd_dead_total{cause="` + cause + `"}`); err != nil || v != n {
		t.Errorf("sllbrd_liveness_bfd_dead_total{cause=%q} %v (%v), want %v", cause, v, err, n)
	}
}

// checkBFDNotes: the Events (log lines from manifests) say what BFD saw:
// t3's addresses never came up, t2's went down. Later ones of the same
// endpoint within a minute are left out by the rate limit.
func checkBFDNotes(t *testing.T, inst *e2e.Instance) {
	t.Helper()
	var neverUp, down int
	for _, ev := range eventLines(t, inst, "service-a") {
		switch {
		case ev.Reason != reasonEndpointDead:
		case strings.Contains(ev.Note, "no BFD session came up with the target side"):
			neverUp++
		case strings.Contains(ev.Note, "its BFD session went down"):
			down++
		}
	}
	if neverUp != 2 || down != 2 {
		t.Errorf("log: %d EndpointDead notes of no BFD session coming up and %d of a session down, want 2 and 2", neverUp, down)
	}
}
