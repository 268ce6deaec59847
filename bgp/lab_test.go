package bgp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// lab is two network namespaces joined by a veth pair: "gw" runs BIRD2 as
// the DC gateway, "lb" runs the speaker (helper process). Addresses follow
// the seed's GatewayRouter: gateway 169.254.100.150, interface vlan-100.
type lab struct {
	t      *testing.T
	dir    string
	gw, lb string // namespace names
	bird   *exec.Cmd
}

const (
	gwV4, lbV4 = "169.254.100.150", "169.254.100.1"
	gwV6, lbV6 = "fd00:100::150", "fd00:100::1"
)

func requireLab(t *testing.T) {
	t.Helper()
	require.Root(t)
	require.Programs(t, "bird", "birdc", "ip")
}

func newLab(t *testing.T) *lab {
	suffix := fmt.Sprintf("%05x", (os.Getpid()<<8^int(time.Now().UnixNano()))&0xfffff)
	l := &lab{t: t, dir: t.TempDir(), gw: "sllbrd-bgp-gw-" + suffix, lb: "sllbrd-bgp-lb-" + suffix}
	for _, ns := range []string{l.gw, l.lb} {
		l.run("ip", "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	l.run("ip", "-n", l.lb, "link", "add", "vlan-100", "type", "veth", "peer", "name", "gw0", "netns", l.gw)
	l.run("ip", "-n", l.lb, "addr", "add", lbV4+"/24", "dev", "vlan-100")
	l.run("ip", "-n", l.lb, "addr", "add", lbV6+"/64", "dev", "vlan-100", "nodad")
	l.run("ip", "-n", l.gw, "addr", "add", gwV4+"/24", "dev", "gw0")
	l.run("ip", "-n", l.gw, "addr", "add", gwV6+"/64", "dev", "gw0", "nodad")
	for _, ns := range []string{l.gw, l.lb} {
		l.run("ip", "-n", ns, "link", "set", "lo", "up")
	}
	l.run("ip", "-n", l.lb, "link", "set", "vlan-100", "up")
	l.run("ip", "-n", l.gw, "link", "set", "gw0", "up")
	l.startBird()
	return l
}

func (l *lab) run(args ...string) string {
	l.t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		l.t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// birdConf is the gateway as Meridio configures it: port 10179 both ways,
// AS 4248829953 against our 8103, hold 24 s; it exports a default route and
// one other prefix (which our import policy must reject) and installs what it
// learns into its kernel table. Error wait times are short so that the
// gateway accepts a new session soon after a shutdown.
const birdConf = `log "%[1]s/bird.log" all;
router id 169.254.100.150;
protocol device {}
protocol kernel k4 { ipv4 { import none; export where source = RTS_BGP; }; }
protocol kernel k6 { ipv6 { import none; export where source = RTS_BGP; }; }
protocol static s4 { ipv4; route 0.0.0.0/0 blackhole; route 10.99.0.0/16 blackhole; }
protocol static s6 { ipv6; route ::/0 blackhole; route fd99::/48 blackhole; }
template bgp lb {
  hold time 24; error wait time 1, 5; connect delay time 1; connect retry time 2;
}
protocol bgp lb4 from lb {
  local 169.254.100.150 port 10179 as 4248829953;
  neighbor 169.254.100.1 port 10179 as 8103;
  ipv4 { import all; export where source = RTS_STATIC; };
}
protocol bgp lb6 from lb {
  local fd00:100::150 port 10179 as 4248829953;
  neighbor fd00:100::1 port 10179 as 8103;
  ipv6 { import all; export where source = RTS_STATIC; };
}
`

func (l *lab) startBird() {
	conf := filepath.Join(l.dir, "bird.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(birdConf, l.dir)), 0o644); err != nil {
		l.t.Fatal(err)
	}
	l.bird = exec.Command("ip", "netns", "exec", l.gw, "bird", "-f", "-c", conf, "-s", l.birdSock())
	l.bird.Stdout, l.bird.Stderr = io.Discard, io.Discard
	if err := l.bird.Start(); err != nil {
		l.t.Fatalf("start bird: %v", err)
	}
	pid := l.bird.Process.Pid
	l.t.Cleanup(func() {
		_ = l.bird.Process.Kill()
		_ = l.bird.Wait()
		l.t.Logf("bird (pid %d) stopped", pid)
	})
	l.waitFor(10*time.Second, "bird control socket", func() bool {
		return exec.Command("birdc", "-s", l.birdSock(), "show", "status").Run() == nil
	})
}

func (l *lab) birdSock() string { return filepath.Join(l.dir, "bird.ctl") }

// birdProto returns BIRD's one-line state of protocol name.
func (l *lab) birdProto(name string) string {
	out, _ := exec.Command("birdc", "-s", l.birdSock(), "show", "protocols", name).CombinedOutput()
	return string(out)
}

// gwRoute returns the gateway kernel's route to dst ("" if none).
func (l *lab) gwRoute(dst string) string {
	fam := "-4"
	if strings.Contains(dst, ":") {
		fam = "-6"
	}
	out, _ := exec.Command("ip", "-n", l.gw, fam, "route", "show", dst).CombinedOutput()
	return strings.TrimSpace(string(out))
}

// waitFor polls cond every 10 ms and returns the time it took.
func (l *lab) waitFor(limit time.Duration, what string, cond func() bool) time.Duration {
	l.t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			l.t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

// speakerProc is the helper process running the speaker in the lb namespace.
type speakerProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	events chan helperEvent
	latest Gateways // last gateway set the helper reported
}

func (l *lab) startSpeaker(env ...string) *speakerProc {
	exe, err := os.Executable()
	if err != nil {
		l.t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", l.lb, exe, "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"=1"), env...)
	logf, err := os.Create(filepath.Join(l.dir, "speaker.log"))
	if err != nil {
		l.t.Fatal(err)
	}
	cmd.Stderr = logf
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		l.t.Fatalf("start helper: %v", err)
	}
	p := &speakerProc{t: l.t, cmd: cmd, in: in, events: make(chan helperEvent, 64)}
	pid := cmd.Process.Pid
	l.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if l.t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			l.t.Logf("speaker log (pid %d):\n%s", pid, tail(string(b), 60))
			b, _ = os.ReadFile(filepath.Join(l.dir, "bird.log"))
			l.t.Logf("bird log:\n%s", tail(string(b), 40))
		}
	})
	go func() {
		defer close(p.events)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e helperEvent
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				p.events <- e
			}
		}
	}()
	return p
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// do sends c and waits for its completion.
func (p *speakerProc) do(c helperCmd) helperEvent {
	p.t.Helper()
	b, _ := json.Marshal(c)
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("write command: %v", err)
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-p.events:
			if !ok {
				p.t.Fatalf("helper exited during %s", c.Op)
			}
			if e.Ev == "gateways" {
				p.latest = *e.Gateways
			}
			if e.Ev == "done" && e.Op == c.Op {
				if e.Err != "" {
					p.t.Fatalf("%s: %s", c.Op, e.Err)
				}
				return e
			}
		case <-timeout:
			p.t.Fatalf("no answer to %s", c.Op)
		}
	}
}

// waitGateways waits until the latest gateway set satisfies cond and
// returns the time since start.
func (p *speakerProc) waitGateways(start time.Time, limit time.Duration, cond func(Gateways) bool) time.Duration {
	p.t.Helper()
	timeout := time.After(limit)
	for !cond(p.latest) {
		select {
		case e, ok := <-p.events:
			if !ok {
				p.t.Fatal("helper exited")
			}
			if e.Ev == "gateways" {
				p.latest = *e.Gateways
			}
		case <-timeout:
			p.t.Fatalf("no matching gateway set within %v; latest %+v", limit, p.latest)
		}
	}
	return time.Since(start)
}
