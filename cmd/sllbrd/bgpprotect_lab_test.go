package main

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/e2e"
	"github.com/sllbrd/sllbrd/internal/harness/lab"
	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// negativeWait bounds the waits that show a session does NOT come up: GoBGP
// dials every 3 to 6 s, so this is two attempts at least.
const negativeWait = 12 * time.Second

// secretDoc is the v1 Secret bgp-auth holding password under "password".
func secretDoc(password string) string {
	return fmt.Sprintf("---\napiVersion: v1\nkind: Secret\nmetadata: {name: bgp-auth}\nstringData: {password: %q}\n", password)
}

// bgpRouters are GatewayRouters gw-v4 and gw-v6 at addrs with the bgp block spec.
func bgpRouters(addrs []netip.Addr, spec string) []e2e.Router {
	return []e2e.Router{{Name: "gw-v4", Address: addrs[0].String(), Spec: spec}, {Name: "gw-v6", Address: addrs[1].String(), Spec: spec}}
}

// birdEstablished reports whether BIRD's BGP session with the LB address a
// is Established.
func birdEstablished(t *testing.T, b *lab.BIRD, a netip.Addr) bool {
	return strings.Contains(birdc(t, b, "show", "protocols", lab.BIRDProtocolName(a)), "Established")
}

// anyEstablished reports whether any of BIRD's sessions with addrs is up.
func anyEstablished(t *testing.T, b *lab.BIRD, addrs []netip.Addr) bool {
	for _, a := range addrs {
		if birdEstablished(t, b, a) {
			return true
		}
	}
	return false
}

// tcpExt reads the TcpExt counter name of /proc/net/netstat in node.
func tcpExt(t *testing.T, l *lab.Lab, node, name string) uint64 {
	t.Helper()
	return netCounter(t, l, node, "/proc/net/netstat", "TcpExt:", name)
}

// netCounter reads counter name of section (e.g. "Ip:") in file, a
// /proc/net table of header and value lines, in node.
func netCounter(t *testing.T, l *lab.Lab, node, file, section, name string) uint64 {
	t.Helper()
	lines := strings.Split(exec1(t, l, node, "cat", file), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		keys, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(keys) == 0 || keys[0] != section || len(keys) != len(values) {
			continue
		}
		for j, k := range keys {
			if k == name {
				v, err := strconv.ParseUint(values[j], 10, 64)
				if err != nil {
					t.Fatalf("%s: %s %s = %q: %v", node, section, name, values[j], err)
				}
				return v
			}
		}
	}
	t.Fatalf("%s: no counter %s %s in %s", node, section, name, file)
	return 0
}

// neverWithin fails the test if cond holds at any poll during d.
func neverWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if cond() {
			t.Fatalf("%s", what)
		}
	}
}

// TestIntegrationBIRDPassword: with BIRD requiring a TCP MD5 password
// (RFC 2385), a GatewayRouter whose Secret holds a wrong password never gets
// a session (the gateway's kernel counts the segments it rejected), the
// right one does (the positive control, after an edit of the Secret alone),
// and sllbrd's debug log shows neither password.
func TestIntegrationBIRDPassword(t *testing.T) {
	require.Lab(t)
	l := labSetup(t, 1)
	lb := []netip.Addr{lab.LBGatewaySide(1).V4.Addr(), lab.LBGatewaySide(1).V6.Addr()}
	gw := []netip.Addr{lab.GatewayAddrs().V4.Addr(), lab.GatewayAddrs().V6.Addr()}
	const right, wrong = "lab-md5-secret-1", "wrong-md5-secret"
	cfg := l.DefaultBIRDConfig()
	cfg.Password = right
	b := startBIRD(t, l, cfg)
	spec := `bgp: {localASN: 8103, remoteASN: 4248829953, holdTime: 24s, remotePort: 10179, passwordSecretRef: {name: bgp-auth}}`
	conf := e2e.Config{Routers: bgpRouters(gw, spec), Services: allTargets, Routes: webRoute, Extra: secretDoc(wrong)}
	dir, inst := startUnready(t, l, conf) // not ready: no session, so no return path

	rejected := tcpExt(t, l, lab.GatewayNode, "TCPMD5Failure")
	neverWithin(t, negativeWait, "a BGP session came up with a wrong TCP MD5 password", func() bool { return anyEstablished(t, b, lb) })
	if now := tcpExt(t, l, lab.GatewayNode, "TCPMD5Failure"); now <= rejected {
		t.Fatalf("the gateway's kernel rejected no segment for a bad MD5 signature (TCPMD5Failure %d -> %d): sllbrd did not even try", rejected, now)
	} else {
		t.Logf("wrong password: no session within %v; the gateway rejected %d segments for their MD5 signature", negativeWait, now-rejected)
	}

	conf.Extra = secretDoc(right)
	fixed := time.Now()
	if err := e2e.Write(dir, conf); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		d := waitSince(t, fixed, 20*time.Second, fmt.Sprintf("session with %v after the Secret was corrected", lb[i]), func() bool { return birdEstablished(t, b, lb[i]) })
		waitFor(t, 10*time.Second, "BIRD routes the VIP via sllbrd", func() bool { return gwRoutes(t, l, []netip.Addr{vip4, vip6}[i], lb[i]) })
		t.Logf("right password: %v established %v after the Secret was corrected", lb[i], d.Round(time.Millisecond))
	}
	log, err := os.ReadFile(inst.Proc.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{right, wrong} {
		if strings.Contains(string(log), p) {
			t.Errorf("sllbrd's debug log (%s) shows the password %q", inst.Proc.LogPath, p)
		}
	}
}

// TestIntegrationBIRDTTLSecurity: GTSM (RFC 5082) with BIRD's "ttl security
// on". Directly connected, the session comes up (BIRD accepts only TTL 255,
// so sllbrd sends 255). With BIRD one router farther away (in the client
// namespace, behind the gateway), a GatewayRouter allowing one hop gets no
// session (its kernel drops BIRD's packets, arriving with TTL 254, and counts
// them) while allowing two hops, the positive control, does.
func TestIntegrationBIRDTTLSecurity(t *testing.T) {
	require.Lab(t)
	l := labSetup(t, 1)
	lb := []netip.Addr{lab.LBGatewaySide(1).V4.Addr(), lab.LBGatewaySide(1).V6.Addr()}
	gw := []netip.Addr{lab.GatewayAddrs().V4.Addr(), lab.GatewayAddrs().V6.Addr()}
	cfg := l.DefaultBIRDConfig()
	cfg.TTLSecurity = true
	b := startBIRD(t, l, cfg)
	spec := func(hops int) string {
		return fmt.Sprintf(`bgp: {localASN: 8103, remoteASN: 4248829953, holdTime: 24s, remotePort: 10179, ttlSecurity: {hops: %d}}`, hops)
	}
	conf := e2e.Config{Routers: bgpRouters(gw, spec(1)), Services: allTargets, Routes: webRoute}
	dir, _ := startInstances(t, l, conf, 1)
	for i := range 2 {
		d := waitFor(t, 20*time.Second, fmt.Sprintf("GTSM session with the directly connected gateway (%v)", lb[i]), func() bool { return birdEstablished(t, b, lb[i]) })
		t.Logf("directly connected, GTSM on both sides: %v established after %v", lb[i], d.Round(time.Millisecond))
	}

	// The same gateway, one router farther: BIRD in the client namespace.
	far := []netip.Addr{lab.ClientAddrs().V4.Addr(), lab.ClientAddrs().V6.Addr()}
	farCfg := l.DefaultBIRDConfig()
	farCfg.Node, farCfg.RouterID, farCfg.Multihop, farCfg.TTLSecurity, farCfg.NoDefault = lab.ClientNode, far[0], 2, true, true
	farBIRD := startBIRD(t, l, farCfg)
	conf.Routers = bgpRouters(far, spec(1))
	if err := e2e.Write(dir, conf); err != nil {
		t.Fatal(err)
	}
	dropped := tcpExt(t, l, lab.LBName(1), "TCPMinTTLDrop")
	neverWithin(t, negativeWait, "a GTSM session allowing one hop came up with a gateway two hops away", func() bool { return anyEstablished(t, farBIRD, lb) })
	if now := tcpExt(t, l, lab.LBName(1), "TCPMinTTLDrop"); now <= dropped {
		t.Fatalf("sllbrd's kernel dropped no packet below the minimum TTL (TCPMinTTLDrop %d -> %d): the gateway was not even reached", dropped, now)
	} else {
		t.Logf("one hop allowed, gateway two hops away: no session within %v; %d packets dropped below the minimum TTL", negativeWait, now-dropped)
	}

	conf.Routers = bgpRouters(far, spec(2))
	widened := time.Now()
	if err := e2e.Write(dir, conf); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		d := waitSince(t, widened, 20*time.Second, fmt.Sprintf("GTSM session allowing two hops with %v", far[i]), func() bool { return birdEstablished(t, farBIRD, lb[i]) })
		t.Logf("two hops allowed: %v established %v after the edit", lb[i], d.Round(time.Millisecond))
	}
}
