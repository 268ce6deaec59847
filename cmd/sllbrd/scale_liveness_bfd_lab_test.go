package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

var (
	scaleBFDRest    = flag.Duration("scale.bfd-rest", 20*time.Second, "TestIntegrationLivenessBFDScale: how long the sessions are watched at rest (no flap, the packet rates, sllbrd's CPU)")
	scaleBFDProfile = flag.String("scale.bfd-profile", "", "TestIntegrationLivenessBFDScale: write a 4 s CPU profile of sllbrd at rest with probe=bfd to this file")
)

// scalePprofAddress is sllbrd's --pprof-address when -scale.bfd-profile is
// set.
const scalePprofAddress = "127.0.0.1:6060"

// TestIntegrationLivenessBFDScale: one SLLBR (kernel dataplane, from
// manifests) whose Service of -scale.endpoints dual-stack endpoints (the
// scale lab: three target namespaces holding 2,000 addresses) is probed by
// BFD at the default timing (200 ms × 4): one session per address on its
// BFD server, the target side a bfdReflector in each target namespace. It
// checks that every session comes Up within the start grace (detection +
// 3 s after programmed) and no address is ever found dead; that over
// -scale.bfd-rest no session leaves Up on either side; that sllbrd sends
// one packet per session per jittered interval (75 to 100 % of 200 ms,
// 5 % slack below) and receives every answer (its UDP counters against the
// reflector's, no receive buffer errors: the BFD server keeps up with its
// listeners at 2,000 sessions); and that it holds a socket per session,
// which it closes when the Service's liveness moves to icmp and off. It logs the figures: time to Up, packets a second each way, CPU,
// open files, RSS and heap with bfd, icmp and off.
func TestIntegrationLivenessBFDScale(t *testing.T) {
	n := *scaleEndpoints
	l, checkNoOverflow := newScaleLab(t, n)
	refl := startBFDReflector(t, l, labInterval, uint8(labDetection/labInterval), "t1", "t2", "t3")
	dir := t.TempDir()
	if err := writeScaleManifests(dir, n, "probe=bfd"); err != nil {
		t.Fatal(err)
	}
	var extra []string
	if *scaleBFDProfile != "" {
		extra = append(extra, "--pprof-address", scalePprofAddress)
	}
	started := time.Now()
	inst, programmed := startScaleSllbrd(t, l, dir, extra...)
	logNoFileLimit(t, inst.Proc.PID)

	// Every session Up (the reflector's side first: it is Up once the
	// SLLBR's side is), none found dead meanwhile.
	grace := labDetection + 3*time.Second
	var c reflectorCounts
	var seen int
	var firstUp time.Time
	for deadline := started.Add(programmed + grace + 10*time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, seen, firstUp = refl.snapshot(); c.Up == 2*n || time.Now().After(deadline) {
			break
		}
	}
	if c.Up != 2*n {
		t.Fatalf("%d of %d BFD sessions Up at the reflector %v after start (%d seen): %+v", c.Up, 2*n, time.Since(started), seen, c)
	}
	t.Logf("%d endpoints, both families, probe=bfd: programmed %v after start; the first of %d sessions Up after %v, the last after %v",
		n, programmed.Round(time.Millisecond), 2*n, firstUp.Sub(started).Round(time.Millisecond), c.LastUp.Sub(started).Round(time.Millisecond))
	if took := c.LastUp.Sub(started); took > programmed+grace {
		t.Errorf("the last BFD session Up %v after start, want within the start grace %v of programmed (%v)", took, grace, programmed+grace)
	}
	waitFor(t, 5*time.Second, "sllbrd's sessions all Up", func() bool {
		v, _, err := inst.Metric(`sllbrd_liveness_bfd_session_up{`)
		return err == nil && int(v) == 2*n
	})
	waitProbed(t, inst, 2*n, 0, 5*time.Second)
	checkBFDScaleHealthy(t, inst)

	bfdRest := measureBFDRest(t, inst, refl, n, *scaleBFDRest)
	checkBFDScaleHealthy(t, inst)
	if *scaleBFDProfile != "" {
		status, body, err := inst.GetAt(scalePprofAddress, "/debug/pprof/profile?seconds=4")
		if err == nil && status != 200 {
			err = fmt.Errorf("status %d", status)
		}
		if err == nil {
			err = os.WriteFile(*scaleBFDProfile, []byte(body), 0o644)
		}
		if err != nil {
			t.Errorf("sllbrd's CPU profile: %v", err)
		}
	}
	if int(bfdRest.files) < 2*n {
		t.Errorf("sllbrd holds %d open files with %d BFD sessions, want one socket per session at least", bfdRest.files, 2*n)
	}

	// The same Service probed by ICMP, then not at all: the sessions' sockets
	// are closed once their AdminDown packets are out.
	var rests []procRest
	for _, liveness := range []string{"probe=icmp", "off"} {
		gen, _, err := inst.Metric("sllbrd_config_last_applied_generation")
		if err != nil {
			t.Fatal(err)
		}
		if err := writeScaleManifests(dir, n, liveness); err != nil {
			t.Fatal(err)
		}
		waitGeneration(t, inst, uint64(gen)+1)
		if liveness == "off" {
			waitProbed(t, inst, 0, 0, 10*time.Second)
		} else {
			waitProbed(t, inst, 2*n, 0, 10*time.Second)
		}
		waitFor(t, 15*time.Second, "the BFD sessions' sockets closed", func() bool {
			return openFiles(t, inst.Proc.PID) < bfdRest.files-2*n+10
		})
		rests = append(rests, measureProcRest(t, inst, liveness, 10*time.Second))
	}
	icmp, off := rests[0], rests[1]
	t.Logf("sllbrd at rest, %d addresses: probe=bfd %.1f m of CPU, %d open files; probe=icmp %.1f m, %d files; off %.1f m, %d files; BFD: %.1f m and %d files over off, %.1f µs per packet sent or received",
		2*n, bfdRest.milli, bfdRest.files, icmp.milli, icmp.files, off.milli, off.files, bfdRest.milli-off.milli, bfdRest.files-off.files,
		1000*(bfdRest.milli-off.milli)/(bfdRest.sent+bfdRest.received))

	checkNoOverflow()
}

// checkBFDScaleHealthy: sllbrd found no address dead, by any cause, and
// counted no failed session operation.
func checkBFDScaleHealthy(t *testing.T, inst *e2e.Instance) {
	t.Helper()
	for _, m := range []string{`sllbrd_liveness_bfd_dead_total{`, `sllbrd_endpoint_liveness_transitions_total{direction="down"}`, `sllbrd_liveness_bfd_session_errors_total{`} {
		if v, _, err := inst.Metric(m); err != nil || v != 0 {
			t.Errorf("%s: %v (%v), want 0", m, v, err)
		}
	}
}

// procRest is sllbrd's cost over a window at rest.
type procRest struct {
	milli    float64 // CPU, thousandths of a core
	files    int     // open file descriptors at the end
	rss      uint64  // bytes
	heap     float64 // Go heap in use, bytes
	sent     float64 // UDP datagrams sent a second, both families
	received float64 // and received
}

// measureProcRest measures sllbrd's CPU over window and its open files,
// RSS, heap and UDP datagrams a second each way (its namespace's counters:
// it is the only UDP user there), and logs them under name.
func measureProcRest(t *testing.T, inst *e2e.Instance, name string, window time.Duration) procRest {
	t.Helper()
	time.Sleep(time.Second) // the last scrape's garbage collected
	u0, p0, t0 := udpCounters(t, inst.Proc.PID), readProcStats(t, inst.Proc.PID), time.Now()
	time.Sleep(window)
	u1, p1, w := udpCounters(t, inst.Proc.PID), readProcStats(t, inst.Proc.PID), time.Since(t0)
	heap, _, err := inst.Metric("go_memstats_heap_inuse_bytes")
	if err != nil {
		t.Fatal(err)
	}
	r := procRest{milli: 1000 * float64(p1.CPU()-p0.CPU()) / float64(w), files: openFiles(t, inst.Proc.PID), rss: p1.RSS, heap: heap,
		sent: float64(u1["OutDatagrams"]-u0["OutDatagrams"]) / w.Seconds(), received: float64(u1["InDatagrams"]-u0["InDatagrams"]) / w.Seconds()}
	t.Logf("sllbrd at rest with %s for %v: CPU %.1f m (user %v, system %v), UDP %.0f/s sent and %.0f/s received, %d open files, RSS %.1f MiB (anonymous %.1f MiB), heap in use %.1f MiB",
		name, w.Round(time.Millisecond), r.milli, (p1.User - p0.User).Round(time.Millisecond), (p1.System - p0.System).Round(time.Millisecond),
		r.sent, r.received, r.files, float64(p1.RSS)/(1<<20), float64(p1.RSSAnon)/(1<<20), heap/(1<<20))
	for _, k := range []string{"RcvbufErrors", "SndbufErrors", "InErrors"} {
		if d := u1[k] - u0[k]; d != 0 {
			t.Errorf("sllbrd's namespace counted %d UDP %s at rest with %s", d, k, name)
		}
	}
	return r
}

// measureBFDRest is measureProcRest with the sessions probed by BFD,
// against the reflector's counts over the same window: sllbrd sends one
// packet per session per jittered interval, and the reflector's answers all
// reach it; no session leaves Up on either side.
func measureBFDRest(t *testing.T, inst *e2e.Instance, refl *bfdReflector, n int, window time.Duration) procRest {
	t.Helper()
	c0, _, _ := refl.snapshot()
	start := time.Now()
	r := measureProcRest(t, inst, "probe=bfd", window)
	c1, _, _ := refl.snapshot()
	w := time.Since(start).Seconds()
	rx, tx := float64(c1.Received-c0.Received)/w, float64(c1.Sent-c0.Sent)/w
	// RFC 5880 section 6.8.7: each interval is 75 to 100 % of labInterval.
	lo, hi := float64(2*n)/labInterval.Seconds(), float64(2*n)/(0.75*labInterval.Seconds())
	t.Logf("the reflector: %.0f/s received and %.0f/s sent over %.1f s (a packet every %.1f ms per session); dropped: %d bad TTL, %d invalid, %d mismatched, %d send errors",
		rx, tx, w, 2000*float64(n)/rx, c1.BadTTL, c1.Invalid, c1.Mismatched, c1.SendErrors)
	if rx < lo*0.95 || rx > hi {
		t.Errorf("at rest: the reflector received %.0f BFD packets a second, want %.0f to %.0f (%d sessions, one every 75 to 100 %% of %v)", rx, lo, hi, 2*n, labInterval)
	}
	// Both sides counted over nearly the same window: within 3 %.
	if r.sent < rx*0.97 || r.sent > rx*1.03 || r.received < tx*0.97 || r.received > tx*1.03 {
		t.Errorf("sllbrd sent %.0f and received %.0f UDP datagrams a second, the reflector received %.0f and sent %.0f", r.sent, r.received, rx, tx)
	}
	if c1.BadTTL+c1.Invalid+c1.Mismatched+c1.SendErrors+c1.ReadErrors != 0 {
		t.Errorf("the reflector dropped packets or failed to answer: %+v", c1)
	}
	if c1.Downs != c0.Downs || c1.Up != 2*n {
		t.Errorf("at rest: %d BFD sessions left Up (%d before), %d Up, want none and %d", c1.Downs, c0.Downs, c1.Up, 2*n)
	}
	if v, _, err := inst.Metric(`sllbrd_liveness_bfd_session_up{`); err != nil || int(v) != 2*n {
		t.Errorf("after the rest: sllbrd has %v BFD sessions Up (%v), want %d", v, err, 2*n)
	}
	return r
}

func readProcStats(t *testing.T, pid int) lab.ProcStats {
	t.Helper()
	p, err := lab.ReadProcStats(pid)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// openFiles returns how many file descriptors pid has open.
func openFiles(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// logNoFileLimit logs pid's RLIMIT_NOFILE: each BFD session holds a socket.
func logNoFileLimit(t *testing.T, pid int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, "Max open files") {
			t.Logf("sllbrd: %s", strings.Join(strings.Fields(line), " "))
		}
	}
}

// udpCounters returns the UDP counters of pid's network namespace, both
// families summed, by their /proc/net/snmp names (InDatagrams,
// OutDatagrams, RcvbufErrors, ...; snmp6's Udp6 prefix dropped).
func udpCounters(t *testing.T, pid int) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	add := func(name, value string) {
		v, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			t.Fatalf("UDP counter %s %q: %v", name, value, err)
		}
		out[name] += v
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/snmp", pid))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = f[1:]
			continue
		}
		for i, v := range f[1:] {
			add(names[i], v)
		}
	}
	f6, err := os.Open(fmt.Sprintf("/proc/%d/net/snmp6", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f6.Close()
	sc := bufio.NewScanner(f6)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && strings.HasPrefix(f[0], "Udp6") {
			add(strings.TrimPrefix(f[0], "Udp6"), f[1])
		}
	}
	if _, ok := out["OutDatagrams"]; !ok || names == nil {
		t.Fatalf("/proc/%d/net/snmp: no UDP counters", pid)
	}
	return out
}
