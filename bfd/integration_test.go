package bfd

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/netns"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// birdLab is BIRD 2 in network namespace nsPeer and our Server in nsOurs,
// joined by a veth pair.
type birdLab struct {
	nsOurs, nsPeer string
	ifOurs, ifPeer string
	sock           string
	srv            *Server
	mu             sync.Mutex
	events         []timedEvent
}

type timedEvent struct {
	Event
	at time.Time
}

const (
	labOurs4 = "10.99.0.1"
	labPeer4 = "10.99.0.2"
	labOurs6 = "fd00:99::1"
	labPeer6 = "fd00:99::2"
)

func newBirdLab(t *testing.T) *birdLab {
	t.Helper()
	require.Lab(t)
	id := rand.IntN(1 << 20)
	l := &birdLab{ifOurs: fmt.Sprintf("vbfd%da", id), ifPeer: fmt.Sprintf("vbfd%db", id)}
	l.nsOurs, _ = netns.New(t, "sllbrd-bfd-a")
	l.nsPeer, _ = netns.New(t, "sllbrd-bfd-b")
	for _, ns := range []string{l.nsOurs, l.nsPeer} {
		netns.Run(t, "ip", "-n", ns, "link", "set", "lo", "up")
	}
	netns.Run(t, "ip", "link", "add", l.ifOurs, "netns", l.nsOurs, "type", "veth", "peer", "name", l.ifPeer, "netns", l.nsPeer)
	for _, a := range [][3]string{{l.nsOurs, l.ifOurs, labOurs4}, {l.nsPeer, l.ifPeer, labPeer4}} {
		netns.Run(t, "ip", "-n", a[0], "addr", "add", a[2]+"/24", "dev", a[1])
	}
	netns.Run(t, "ip", "-n", l.nsOurs, "addr", "add", labOurs6+"/64", "dev", l.ifOurs, "nodad")
	netns.Run(t, "ip", "-n", l.nsPeer, "addr", "add", labPeer6+"/64", "dev", l.ifPeer, "nodad")
	netns.Run(t, "ip", "-n", l.nsOurs, "link", "set", l.ifOurs, "up")
	netns.Run(t, "ip", "-n", l.nsPeer, "link", "set", l.ifPeer, "up")
	l.startBird(t)
	return l
}

func (l *birdLab) startBird(t *testing.T) {
	t.Helper()
	l.startBirdConf(t, fmt.Sprintf(`router id %s;
protocol device {}
protocol bfd {
	interface "vbfd*" { min rx interval 300 ms; min tx interval 300 ms; multiplier 3; };
	neighbor %s dev "%s";
	neighbor %s dev "%s";
}
`, labPeer4, labOurs4, l.ifPeer, labOurs6, l.ifPeer))
}

// startBirdConf runs BIRD with configuration cfg in l.nsPeer until the test
// ends.
func (l *birdLab) startBirdConf(t *testing.T, cfg string) {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "bird.conf")
	l.sock = filepath.Join(dir, "bird.ctl")
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", l.nsPeer, "bird", "-c", conf, "-s", l.sock,
		"-P", filepath.Join(dir, "bird.pid"), "-f")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

// birdState returns BIRD's state of its session with peer ("" if unknown).
func (l *birdLab) birdState(peer string) (state, line string) {
	out, _ := exec.Command("birdc", "-s", l.sock, "show", "bfd", "sessions").CombinedOutput()
	for _, ln := range strings.Split(string(out), "\n") {
		f := strings.Fields(ln)
		if len(f) >= 3 && f[0] == peer {
			return f[2], strings.TrimSpace(ln)
		}
	}
	return "", ""
}

// runServerInNetns runs l.srv inside l.nsOurs (netns.Do), so its sockets
// live there, until the test ends.
func (l *birdLab) runServerInNetns(t *testing.T) {
	t.Helper()
	l.srv = NewServer(WithEventHandler(func(e Event) {
		l.mu.Lock()
		l.events = append(l.events, timedEvent{e, time.Now()})
		l.mu.Unlock()
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done, entered := make(chan error, 1), make(chan struct{})
	go func() {
		done <- netns.Do(l.nsOurs, func() error {
			close(entered)
			_ = l.srv.Run(ctx)
			return nil
		})
	}()
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("enter netns: %v", err)
	}
	t.Cleanup(func() { cancel(); <-done })
}

func (l *birdLab) eventSince(k Key, since time.Time, st State) (timedEvent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.Key == k && e.New == st && !e.at.Before(since) {
			return e, true
		}
	}
	return timedEvent{}, false
}

func (l *birdLab) setCut(t *testing.T, cut bool) {
	t.Helper()
	script := "delete table inet sllbrd_bfd_cut\n"
	if cut {
		script = `table inet sllbrd_bfd_cut {
	chain in { type filter hook input priority 0; udp dport 3784 drop; }
	chain out { type filter hook output priority 0; udp dport 3784 drop; }
}
`
	}
	cmd := exec.Command("ip", "netns", "exec", l.nsPeer, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v: %s", err, out)
	}
}

// waitBoth waits until our session and BIRD's are both in state st and
// returns when each side got there.
func (l *birdLab) waitBoth(t *testing.T, k Key, birdPeer string, since time.Time, st State, birdSt string, timeout time.Duration) (ours, theirs time.Duration) {
	t.Helper()
	deadline := since.Add(timeout)
	for ours == 0 || theirs == 0 {
		if time.Now().After(deadline) {
			_, line := l.birdState(birdPeer)
			t.Fatalf("%v: not %v/%s on both sides within %v (ours %v, BIRD %q)", k, st, birdSt, timeout, ours, line)
		}
		if e, ok := l.eventSince(k, since, st); ok && ours == 0 {
			ours = e.at.Sub(since)
		}
		if s, _ := l.birdState(birdPeer); s == birdSt && theirs == 0 {
			theirs = time.Since(since)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return ours, theirs
}

// addAll adds a session per configuration, with the lab's timers (300 ms x
// 3), and returns their keys.
func (l *birdLab) addAll(t *testing.T, cfgs []SessionConfig) []Key {
	t.Helper()
	keys := make([]Key, len(cfgs))
	for i, cfg := range cfgs {
		cfg.DesiredMinTx, cfg.RequiredMinRx, cfg.DetectMultiplier = 300*time.Millisecond, 300*time.Millisecond, 3
		if err := l.srv.Add(cfg); err != nil {
			t.Fatal(err)
		}
		keys[i] = cfg.Key()
	}
	return keys
}

// waitNegotiated waits until session k is Up with the lab's timers in
// effect: once Up, both sides leave the slow rate with a Poll Sequence (RFC
// 5880 6.8.3), which must have completed.
func (l *birdLab) waitNegotiated(t *testing.T, k Key, name string) Stats {
	t.Helper()
	waitFor(t, 5*time.Second, name+": Up with 300 ms / 900 ms and the Poll Sequence completed", func() bool {
		st, _ := l.srv.Stats(k)
		return st.State == StateUp && st.TxInterval == 300*time.Millisecond && st.DetectionTime == 900*time.Millisecond && !st.Polling
	})
	st, _ := l.srv.Stats(k)
	return st
}

func TestIntegrationBIRD(t *testing.T) {
	l := newBirdLab(t)
	l.runServerInNetns(t)
	sessions := []struct {
		name           string
		peer, birdPeer string
	}{{"IPv4", labPeer4, labOurs4}, {"IPv6", labPeer6, labOurs6}}
	var cfgs []SessionConfig
	for _, s := range sessions {
		cfgs = append(cfgs, SessionConfig{Peer: netip.MustParseAddr(s.peer), Interface: l.ifOurs})
	}
	start := time.Now()
	keys := l.addAll(t, cfgs)
	for i, s := range sessions {
		ours, theirs := l.waitBoth(t, keys[i], s.birdPeer, start, StateUp, "Up", 10*time.Second)
		t.Logf("%s: Up after start: ours %v, BIRD %v", s.name, ours, theirs)
	}
	for i, s := range sessions {
		st := l.waitNegotiated(t, keys[i], s.name)
		_, line := l.birdState(s.birdPeer)
		t.Logf("%s: ours tx %v detect %v polling %v in %d out %d; BIRD: %s", s.name, st.TxInterval,
			st.DetectionTime, st.Polling, st.PacketsIn, st.PacketsOut, line)
	}
	const detect, margin = 900 * time.Millisecond, 300 * time.Millisecond
	cut := time.Now()
	l.setCut(t, true)
	for i, s := range sessions {
		ours, theirs := l.waitBoth(t, keys[i], s.birdPeer, cut, StateDown, "Down", 5*time.Second)
		t.Logf("%s: link cut: Down detected: ours %v, BIRD %v (detection time %v)", s.name, ours, theirs, detect)
		if ours > detect+margin || theirs > detect+margin {
			t.Errorf("%s: detection too slow: ours %v, BIRD %v", s.name, ours, theirs)
		}
		if e, _ := l.eventSince(keys[i], cut, StateDown); e.Diag != DiagControlDetectExpired || e.PeerAdminDown {
			t.Errorf("%s: down event %+v, want detection expiry", s.name, e.Event)
		}
	}
	restore := time.Now()
	l.setCut(t, false)
	for i, s := range sessions {
		ours, theirs := l.waitBoth(t, keys[i], s.birdPeer, restore, StateUp, "Up", 10*time.Second)
		t.Logf("%s: link restored: Up again: ours %v, BIRD %v", s.name, ours, theirs)
	}
	// Graceful stop: BIRD must see AdminDown, not a timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stop := time.Now()
	if err := l.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := time.Since(stop)
	for _, s := range sessions {
		waitForBird(t, l, s.birdPeer, "Down", 2*time.Second)
		t.Logf("%s: BIRD Down; Shutdown (3 AdminDown packets) took %v", s.name, stopped)
	}
}

func waitForBird(t *testing.T, l *birdLab, peer, want string, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, "BIRD "+peer+" "+want, func() bool { s, _ := l.birdState(peer); return s == want })
}
