package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/lab/responder"
)

// An askStream keeps asking the same UDP flows, each a fixed 5-tuple from
// the client to a VIP, every streamTick, and records which target answers
// each request: a test sees, to about one tick, when a flow stopped being
// answered and which target answers it afterwards. It is bounded in time
// (streamMax) and so in packets (flows × streamMax / streamTick).
const (
	streamTick = 10 * time.Millisecond
	streamMax  = 60 * time.Second
)

// streamFlow is one flow of a stream and the target it reached at the start.
type streamFlow struct {
	vip   netip.Addr
	port  uint16 // source port
	start string // the target that answered it before the test changed anything
}

// answer is one reply of a flow.
type answer struct {
	at     time.Time
	flow   int // index in askStream.flows
	target string
}

type askStream struct {
	flows []streamFlow
	conns []*net.UDPConn
	stop  chan struct{}
	wg    sync.WaitGroup

	mu      sync.Mutex
	answers []answer
	sent    int
	errs    []error
}

// startStream opens one socket per flow in the client's namespace and
// starts asking.
func startStream(t *testing.T, l *lab.Lab, flows []streamFlow, dstPort uint16) *askStream {
	t.Helper()
	s := &askStream{flows: flows, stop: make(chan struct{})}
	err := l.Do(lab.ClientNode, func() error {
		for _, f := range flows {
			src := netip.AddrPortFrom(lab.ClientAddrs().For(f.vip), f.port)
			c, err := net.DialUDP("udp", net.UDPAddrFromAddrPort(src), net.UDPAddrFromAddrPort(netip.AddrPortFrom(f.vip, dstPort)))
			if err != nil {
				return fmt.Errorf("stream flow from %s: %w", src, err)
			}
			s.conns = append(s.conns, c)
		}
		return nil
	})
	if err != nil {
		s.close()
		t.Fatal(err)
	}
	for i, c := range s.conns {
		s.wg.Go(func() { s.read(i, c) })
	}
	s.wg.Go(s.send)
	t.Cleanup(s.close)
	return s
}

// send asks every flow once a tick until stopped or streamMax.
func (s *askStream) send() {
	tick := time.NewTicker(streamTick)
	defer tick.Stop()
	deadline := time.After(streamMax)
	payload := []byte("liveness\n")
	for {
		select {
		case <-s.stop:
			return
		case <-deadline:
			return
		case <-tick.C:
		}
		for _, c := range s.conns {
			if _, err := c.Write(payload); err != nil && !errors.Is(err, net.ErrClosed) {
				// ECONNREFUSED from an earlier ICMP error, say: the flow's
				// reply is what the test reads.
				continue
			}
			s.mu.Lock()
			s.sent++
			s.mu.Unlock()
		}
	}
}

// read records the replies of flow i.
func (s *askStream) read(i int, c *net.UDPConn) {
	buf := make([]byte, 512)
	for {
		n, err := c.Read(buf)
		now := time.Now()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue // an ICMP error of a lost request (connection refused): no answer
		}
		r, err := responder.ParseReply(string(buf[:n]))
		s.mu.Lock()
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("flow %d: %w", i, err))
		} else if r.Client.Port() != s.flows[i].port {
			s.errs = append(s.errs, fmt.Errorf("flow %d: reply for port %d", i, r.Client.Port()))
		} else {
			s.answers = append(s.answers, answer{at: now, flow: i, target: r.Target})
		}
		s.mu.Unlock()
	}
}

// close stops the stream and closes its sockets; it may be called again.
func (s *askStream) close() {
	select {
	case <-s.stop:
		return
	default:
		close(s.stop)
	}
	for _, c := range s.conns {
		c.Close()
	}
	s.wg.Wait()
}

// snapshot returns the answers so far, and any malformed reply.
func (s *askStream) snapshot() ([]answer, []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.answers), slices.Clone(s.errs)
}

// streamFlowsOf picks up to n flows of each family that reached target and
// n that reached another, from where flows with fixed source ports landed.
func streamFlowsOf(served []map[lab.Flow]string, target string, n int) []streamFlow {
	var out []streamFlow
	for _, m := range served {
		on, off := 0, 0
		flows := make([]lab.Flow, 0, len(m))
		for f := range m {
			flows = append(flows, f)
		}
		slices.SortFunc(flows, func(a, b lab.Flow) int { return int(a.Src.Port()) - int(b.Src.Port()) })
		for _, f := range flows {
			tg := m[f]
			switch {
			case tg == target && on < n:
				on++
			case tg != target && off < n:
				off++
			default:
				continue
			}
			out = append(out, streamFlow{vip: f.Dst.Addr(), port: f.Src.Port(), start: tg})
		}
	}
	return out
}

// timeline is what a stream saw of one family's flows around a fault.
type timeline struct {
	lastOnTarget  time.Time             // the last answer from the dead target before it came back
	firstMoved    time.Time             // the first answer of its flows from another target
	allMoved      time.Time             // when every one of its flows had been answered by another
	movedTo       map[int]string        // flow -> the target that answered it instead
	needless      map[int]string        // flow of another target -> the target Maglev moved it to
	firstBack     time.Time             // the first answer from the target after restored
	misrouted     []string              // answers that broke the rules
	longestGap    map[int]time.Duration // per flow of the target: the longest silence after firstMoved
	answeredAfter int                   // answers from the restored target
}

// analyse reads answers of the flows of vip's family: before fault every
// flow answers from its start target; after it, the flows of dead answer
// from dead, nothing, or one other target each; other flows never move;
// after restored, the dead target's flows return to it.
func (s *askStream) analyse(answers []answer, is4 bool, dead string, fault, restored time.Time) timeline {
	tl := timeline{movedTo: map[int]string{}, needless: map[int]string{}, longestGap: map[int]time.Duration{}}
	last := map[int]time.Time{}
	moved := 0
	for _, a := range answers {
		f := s.flows[a.flow]
		if f.vip.Is4() != is4 {
			continue
		}
		back := !restored.IsZero() && a.at.After(restored)
		switch {
		case f.start != dead && a.target != f.start:
			// Maglev moves a few entries of live endpoints too (needless
			// moves): allowed once the table changed, to one target.
			if to, ok := tl.needless[a.flow]; a.target == dead || a.at.Before(fault) || (ok && to != a.target) {
				tl.misrouted = append(tl.misrouted, fmt.Sprintf("flow from port %d of %s answered by %s at %v", f.port, f.start, a.target, a.at.Sub(fault)))
			}
			tl.needless[a.flow] = a.target
		case f.start != dead:
		case a.target == dead:
			if back {
				tl.answeredAfter++
				if tl.firstBack.IsZero() {
					tl.firstBack = a.at
				}
			} else {
				tl.lastOnTarget = a.at
			}
		default:
			if a.at.Before(fault) {
				tl.misrouted = append(tl.misrouted, fmt.Sprintf("flow from port %d of %s answered by %s before the fault", f.port, dead, a.target))
				continue
			}
			if to, ok := tl.movedTo[a.flow]; ok && to != a.target {
				tl.misrouted = append(tl.misrouted, fmt.Sprintf("flow from port %d of %s answered by %s and by %s", f.port, dead, to, a.target))
			}
			if _, ok := tl.movedTo[a.flow]; !ok {
				tl.movedTo[a.flow] = a.target
				moved++
				if tl.firstMoved.IsZero() {
					tl.firstMoved = a.at
				}
				if moved == s.count(is4, dead) {
					tl.allMoved = a.at
				}
			}
			if p, ok := last[a.flow]; ok && a.at.Sub(p) > tl.longestGap[a.flow] && tl.firstBack.IsZero() {
				tl.longestGap[a.flow] = a.at.Sub(p)
			}
			last[a.flow] = a.at
		}
	}
	return tl
}

// count returns how many flows of the family started on target.
func (s *askStream) count(is4 bool, target string) int {
	n := 0
	for _, f := range s.flows {
		if f.vip.Is4() == is4 && f.start == target {
			n++
		}
	}
	return n
}

// maxGap is the longest silence of any flow in tl.
func (tl timeline) maxGap() time.Duration {
	var g time.Duration
	for _, d := range tl.longestGap {
		g = max(g, d)
	}
	return g
}

// debugAnswers writes the answers to a file for a failed test.
func debugAnswers(t *testing.T, s *askStream, answers []answer, origin time.Time) {
	if !t.Failed() {
		return
	}
	f, err := os.CreateTemp("", "liveness-answers-*.txt")
	if err != nil {
		return
	}
	defer f.Close()
	for _, a := range answers {
		fl := s.flows[a.flow]
		fmt.Fprintf(f, "%8.3f %v:%d start=%s now=%s\n", a.at.Sub(origin).Seconds(), fl.vip, fl.port, fl.start, a.target)
	}
	t.Logf("answers written to %s", f.Name())
}
