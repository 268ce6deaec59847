package targetbfd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/bfd"
	"github.com/sllbrd/sllbrd/internal/harness/require"
	"github.com/sllbrd/sllbrd/internal/targetbfd"
)

// helperEnv set: TestMain runs runHelper instead of the tests: the target
// side's Runner in the process's own namespace, for the Gateways given as
// JSON in the variable, until stdin ends. It first prints its capability
// sets (the lines Cap* of /proc/self/status) on stdout.
const helperEnv = "SLLBRD_TARGETBFD_HELPER"

func TestMain(m *testing.M) {
	if v := os.Getenv(helperEnv); v != "" {
		os.Exit(runHelper(v))
	}
	os.Exit(m.Run())
}

func runHelper(gateways string) int {
	var gws []targetbfd.Gateway
	if err := json.Unmarshal([]byte(gateways), &gws); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "Cap") || strings.HasPrefix(l, "NoNewPrivs") || strings.HasPrefix(l, "Uid") {
			fmt.Println(l)
		}
	}
	fmt.Println("running")
	r := targetbfd.NewRunner(nil, targetbfd.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil)).With("side", "unprivileged pod")))
	r.Set(gws)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // EOF: the test is done
		cancel()
	}()
	_ = r.Run(ctx)
	if s := r.Stats(); s.ServerFailures != 0 || s.SessionFailures != 0 {
		fmt.Fprintf(os.Stderr, "helper: failures: %+v\n", s)
		return 1
	}
	return 0
}

// TestIntegrationTargetSideNeedsNoPrivilege runs the target side in the
// pod's namespace as a process without any capability (root's UID, empty
// effective, permitted, bounding, inheritable and ambient sets,
// no_new_privs), as in a container that dropped ALL: its sessions with
// the SLLBR come Up on both families (UDP 3784 is not a privileged port,
// SO_BINDTODEVICE on an unbound socket needs no CAP_NET_RAW since Linux
// 5.7, rtnetlink dumps are unprivileged), and it sends AdminDown when it
// stops. The sidecar (NET_ADMIN) and the node daemon (SYS_ADMIN and
// NET_ADMIN, for setns) hold more than this.
func TestIntegrationTargetSideNeedsNoPrivilege(t *testing.T) {
	l := newLab(t)
	require.Programs(t, "setpriv")
	lb := l.server(t, "sllbr", l.sllbr, "br0", lb4, lb6)
	gws, err := json.Marshal(l.gateways)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", l.pod, "setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all",
		"--no-new-privs", "--", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(gws))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	caps := map[string]string{}
	for sc := bufio.NewScanner(stdout); sc.Scan() && sc.Text() != "running"; {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			caps[k] = strings.TrimSpace(v)
		}
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if caps[k] != "0000000000000000" {
			t.Errorf("the helper's %s is %q, want none: %v", k, caps[k], caps)
		}
	}
	if caps["NoNewPrivs"] != "1" {
		t.Errorf("the helper's NoNewPrivs: %q", caps["NoNewPrivs"])
	}

	keys := []bfd.Key{{Peer: netip.MustParseAddr(pod4), Interface: "br0"}, {Peer: netip.MustParseAddr(pod6), Interface: "br0"}}
	wait(t, "the SLLBR's sessions with the unprivileged pod Up", func() bool { return allState(lb, keys, bfd.StateUp) })
	since := time.Now()
	stdin.Close()
	wait(t, "the SLLBR's sessions Down by the pod's AdminDown", func() bool { return l.events.peerAdminDown("sllbr", keys, since) })
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("the helper: %v", waitErr)
		}
	case <-time.After(deadline):
		t.Error("the helper did not end")
	}
}
