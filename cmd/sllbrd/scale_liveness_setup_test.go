package main

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
)

// The scale lab: service-a has n dual-stack endpoints (identifiers 0..n-1),
// each address on the target network of the lab's three targets, many
// addresses per target namespace: every tenth endpoint (i%10 == 0) on t2,
// which the test kills, i%10 == 5 on t3, the rest on t1. The responders
// answer with their target's name, so a flow's answer says which of the
// three holds its endpoint. IPv4 endpoints lie in 169.112.0.0/22, an extra
// subnet of the Gateway that lb1 also has on net1 (the lab's /24 holds 254),
// IPv6 endpoints in the lab's fd00:111::/64, from fd00:111::1:0.
var scaleSubnet4 = netip.MustParsePrefix("169.112.0.0/22")

// scaleLB4 is lb1's address in scaleSubnet4: the endpoints are on-link.
const scaleLB4 = "169.112.0.1/22"

// scaleAddrs returns endpoint i's IPv4 and IPv6 addresses.
func scaleAddrs(i int) (netip.Addr, netip.Addr) {
	b := scaleSubnet4.Addr().As4()
	v4 := netip.AddrFrom4([4]byte{b[0], b[1], byte((16 + i) >> 8), byte(16 + i)})
	v6 := netip.AddrFrom16([16]byte{0xfd, 0, 0x01, 0x11, 11: 0, 12: 0, 13: 1, 14: byte(i >> 8), 15: byte(i)})
	return v4, v6
}

// scaleTarget is the lab target that holds endpoint i.
func scaleTarget(i int) string {
	switch i % 10 {
	case 0:
		return "t2"
	case 5:
		return "t3"
	}
	return "t1"
}

// scaleTargetOf returns the target holding an endpoint address of n.
func scaleTargetOf(n int, a netip.Addr) string {
	for i := range n {
		if v4, v6 := scaleAddrs(i); a == v4 || a == v6 {
			return scaleTarget(i)
		}
	}
	return "none"
}

// newScaleLab builds the lab (one LB, three targets, the kernel dataplane)
// with the endpoints' addresses of n endpoints, after making room for them
// in the host's neighbour tables (neighbourRoom, unless
// -scale.keep-neigh-limits). It returns with it the check, for the end of
// the test, that those tables never overflowed since.
func newScaleLab(t *testing.T, n int) (*lab.Lab, func()) {
	t.Helper()
	if n < 20 || n > 1000 {
		t.Fatalf("-scale.endpoints=%d: want 20..1000", n)
	}
	if !*scaleNeighKeep {
		neighbourRoom(t, n+256)
	}
	arp0, nd0 := neighStat(t, "arp_cache"), neighStat(t, "ndisc_cache")
	checkNoOverflow := func() {
		t.Helper()
		arp1, nd1 := neighStat(t, "arp_cache"), neighStat(t, "ndisc_cache")
		if arp1["table_fulls"] != arp0["table_fulls"] || nd1["table_fulls"] != nd0["table_fulls"] {
			t.Errorf("the host's neighbour tables overflowed during the test (ARP %d, NDISC %d times)",
				arp1["table_fulls"]-arp0["table_fulls"], nd1["table_fulls"]-nd0["table_fulls"])
		}
	}
	l := dataplaneLab(t, 1, dataplaneKernel)
	exec1(t, l, lab.LBName(1), "ip", "address", "add", scaleLB4, "dev", lab.TargetLink)
	cmds := map[string][]string{}
	for i := range n {
		v4, v6 := scaleAddrs(i)
		tg := scaleTarget(i)
		cmds[tg] = append(cmds[tg],
			fmt.Sprintf("address add %v/%d dev %s", v4, scaleSubnet4.Bits(), lab.TargetLink),
			fmt.Sprintf("address add %v/64 dev %s nodad", v6, lab.TargetLink))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for tg, c := range cmds {
		if out, err := l.ExecInput(ctx, tg, strings.Join(c, "\n")+"\n", "ip", "-batch", "-"); err != nil {
			t.Fatalf("%s: ip -batch: %v: %s", tg, err, out)
		}
	}
	return l, checkNoOverflow
}

// startScaleSllbrd starts sllbrd in lb1 (kernel dataplane, two queues,
// extra flags) on the manifests in dir and waits until it has programmed
// them; it returns the instance and how long after its start that took.
func startScaleSllbrd(t *testing.T, l *lab.Lab, dir string, extra ...string) (*e2e.Instance, time.Duration) {
	t.Helper()
	started := time.Now()
	inst, err := e2e.Start(l, lab.LBName(1), sllbrdBinary, dir, dataplaneArgs(l, append([]string{"--queues", "2"}, extra...)...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logTail(t, inst) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := inst.WaitProgrammed(ctx, 1); err != nil {
		t.Fatal(err)
	}
	return inst, time.Since(started)
}

// writeScaleManifests writes the lab's Gateway (with scaleSubnet4 among its
// network-subnets), static routers, the route of every other liveness test
// and service-a with n endpoints, in EndpointSlices of 100 per family, its
// liveness annotation set to liveness unless empty; atomically.
func writeScaleManifests(dir string, n int, liveness string) error {
	var b strings.Builder
	ann := fmt.Sprintf("meridio-experiment/max-endpoints: %q", strconv.Itoa(n))
	if liveness != "" {
		ann += fmt.Sprintf(", meridio-experiment/endpoint-liveness: %q", liveness)
	}
	fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: service-a\n  labels: {service.kubernetes.io/service-proxy-name: sllb-a}\n  annotations: {%s}\nspec: {clusterIP: None}\n", ann)
	for _, fam := range []string{"IPv4", "IPv6"} {
		for first := 0; first < n; first += 100 {
			var ids, eps []string
			for i := first; i < min(first+100, n); i++ {
				a, a6 := scaleAddrs(i)
				if fam == "IPv6" {
					a = a6
				}
				ids = append(ids, fmt.Sprintf("%q:%d", a, i))
				eps = append(eps, fmt.Sprintf("- addresses: [%q]\n  conditions: {ready: true}", a))
			}
			fmt.Fprintf(&b, "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: service-a-%s-%d\n  labels: {kubernetes.io/service-name: service-a}\n  annotations:\n    meridio-experiment/endpoint-identifiers: '{%s}'\naddressType: %s\nendpoints:\n%s\n",
				strings.ToLower(fam), first/100, strings.Join(ids, ","), fam, strings.Join(eps, "\n"))
		}
	}
	tmp, err := os.MkdirTemp("", "sllbrd-scale-manifests")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := e2e.Write(tmp, e2e.Config{Routes: webRoute, Extra: b.String()}); err != nil {
		return err
	}
	text, err := os.ReadFile(filepath.Join(tmp, "sllb-a.yaml"))
	if err != nil {
		return err
	}
	const subnets = `'["169.111.100.0/24","fd00:111::/64"]'`
	if strings.Count(string(text), subnets) != 1 {
		return fmt.Errorf("the lab's Gateway has no network-subnets %s", subnets)
	}
	wider := fmt.Sprintf(`'["169.111.100.0/24","%v","fd00:111::/64"]'`, scaleSubnet4)
	out := strings.Replace(string(text), subnets, wider, 1)
	if err := os.WriteFile(filepath.Join(dir, ".sllb-a.yaml.tmp"), []byte(out), 0o644); err != nil {
		return err
	}
	return os.Rename(filepath.Join(dir, ".sllb-a.yaml.tmp"), filepath.Join(dir, "sllb-a.yaml"))
}

// The kernel's neighbour tables (ARP, NDISC) are shared by every network
// namespace of the host, and their hard limit, gc_thresh3 (1024 by
// default), is set in the initial namespace only: an SLLBR probing 1,000
// endpoints on-link holds 1,000 entries of each family, in use, so at the
// defaults it fills the host's table (new entries fail: "neighbor table
// overflow", and with them the probes and flows that need them).
var neighThresholds = []string{
	"/proc/sys/net/ipv4/neigh/default/gc_thresh2", "/proc/sys/net/ipv4/neigh/default/gc_thresh3",
	"/proc/sys/net/ipv6/neigh/default/gc_thresh2", "/proc/sys/net/ipv6/neigh/default/gc_thresh3",
}

// neighbourRoom makes room for need more entries in each neighbour table
// for the test: it raises gc_thresh2 and gc_thresh3 of the host to what the
// tables hold now plus need (gc_thresh2) and twice that (gc_thresh3) when
// they are lower, and at cleanup puts back each value it raised, unless
// something else changed it meanwhile. It puts them back only once the
// tables hold fewer entries than the old limits: the lab's namespaces go
// (and their entries with them) after the test, and a limit lowered under
// the entries in use would make the host's tables full for every other
// test running, whose new neighbours then fail to resolve.
func neighbourRoom(t *testing.T, need int) {
	t.Helper()
	inUse := max(neighEntries(t, "arp_cache"), neighEntries(t, "ndisc_cache"))
	for _, path := range neighThresholds {
		want := inUse + need
		if strings.HasSuffix(path, "3") {
			want *= 2
		}
		old := readSysctlInt(t, path)
		if old >= want {
			continue
		}
		writeSysctlInt(t, path, want)
		t.Logf("%s raised from %d to %d for the test", path, old, want)
		t.Cleanup(func() {
			table := "arp_cache"
			if strings.Contains(path, "ipv6") {
				table = "ndisc_cache"
			}
			for deadline := time.Now().Add(30 * time.Second); neighEntries(t, table) >= old; time.Sleep(100 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Logf("%s left at %d: the host's table still holds %d entries, at or above %d", path, want, neighEntries(t, table), old)
					return
				}
			}
			if v, err := sysctlInt(path); err == nil && v == want {
				writeSysctlInt(t, path, old)
			}
		})
	}
}

// neighEntries returns the entries of the host's neighbour table of
// /proc/net/stat/<table> (the first column, the same on every line).
func neighEntries(t *testing.T, table string) int {
	t.Helper()
	st := neighStat(t, table)
	return int(st["entries"])
}

// neighStat returns the counters of /proc/net/stat/<table>: entries, and
// every other column summed over the CPUs' lines.
func neighStat(t *testing.T, table string) map[string]uint64 {
	t.Helper()
	// The calling thread's namespace: /proc/net is the main thread's, which
	// a lab's netns.Do may have left in a lab namespace (a locked goroutine
	// that ends there wedges the main thread rather than ending it).
	f, err := os.Open("/proc/thread-self/net/stat/" + table)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var names []string
	out := map[string]uint64{}
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if names == nil {
			names = fields
			continue
		}
		for i, v := range fields {
			n, err := strconv.ParseUint(v, 16, 64)
			if err != nil || i >= len(names) {
				t.Fatalf("/proc/net/stat/%s: %q", table, sc.Text())
			}
			if names[i] == "entries" {
				out["entries"] = n
			} else {
				out[names[i]] += n
			}
		}
	}
	return out
}

func sysctlInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func readSysctlInt(t *testing.T, path string) int {
	t.Helper()
	v, err := sysctlInt(path)
	if err != nil {
		t.Fatalf("%s: %v (the test runs in the host's network namespace, as root)", path, err)
	}
	return v
}

func writeSysctlInt(t *testing.T, path string, v int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strconv.Itoa(v)), 0o644); err != nil {
		t.Errorf("%s: %v", path, err)
	}
}

// logRecord is one line of sllbrd's JSON log, with the fields the scale
// test reads.
type logRecord struct {
	Time    time.Time `json:"time"`
	Level   string    `json:"level"`
	Msg     string    `json:"msg"`
	Dead    int       `json:"dead"`
	Alive   int       `json:"alive"`
	Latency string    `json:"latency"`
}

// logRecords returns the records of inst's log with message msg logged at
// or after since.
func logRecords(t *testing.T, inst *e2e.Instance, msg string, since time.Time) []logRecord {
	t.Helper()
	return logJSON(t, inst, func(r logRecord) bool { return r.Msg == msg && !r.Time.Before(since) })
}
