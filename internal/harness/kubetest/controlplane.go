package kubetest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// StartTimeout bounds the start of etcd and of kube-apiserver (2-core CI).
const StartTimeout = 60 * time.Second

// User is a static-token user of the test API server.
type User struct {
	Name   string
	Groups []string
}

// Admin is the user of AdminConfig, a member of system:masters.
var Admin = User{Name: "sllbrd-test-admin", Groups: []string{"system:masters"}}

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	t         testing.TB
	dir       string
	bin       string
	pki       *pkiFiles
	etcd      *process
	apiserver *process
	apiArgs   []string
	addr      netip.Addr // where kube-apiserver listens
	host      string     // https://addr:port
	tokens    map[string]string
}

// Start runs etcd and kube-apiserver for the test, with Admin and users as
// static-token users, and stops them when the test ends. It skips the test
// when the binaries are missing (see the package documentation).
// kube-apiserver listens on 127.0.0.1.
func Start(t testing.TB, users ...User) *ControlPlane {
	t.Helper()
	return StartAt(t, netip.AddrFrom4([4]byte{127, 0, 0, 1}), users...)
}

// StartAt is Start with kube-apiserver listening on addr, a local address of
// the test's network namespace (e.g. one end of a veth pair towards a lab
// namespace); its serving certificate covers addr. etcd stays on loopback.
func StartAt(t testing.TB, addr netip.Addr, users ...User) *ControlPlane {
	t.Helper()
	bin := requireAssets(t)
	cp := &ControlPlane{t: t, dir: t.TempDir(), bin: bin, addr: addr.Unmap(), tokens: map[string]string{}}
	var err error
	if cp.pki, err = newPKI(cp.dir, cp.addr); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	cp.startEtcd()
	cp.configureAPIServer(append([]User{Admin}, users...))
	cp.StartAPIServer()
	return cp
}

// freePort returns a TCP port of addr that was free a moment ago.
func freePort(t testing.TB, addr netip.Addr) int {
	t.Helper()
	l, err := net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		t.Fatalf("kubetest: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (cp *ControlPlane) startEtcd() {
	loopback := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	client := "http://127.0.0.1:" + strconv.Itoa(freePort(cp.t, loopback))
	peer := "http://127.0.0.1:" + strconv.Itoa(freePort(cp.t, loopback))
	args := []string{
		"--name=default", "--data-dir=" + filepath.Join(cp.dir, "etcd"),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=default=" + peer, "--unsafe-no-fsync", "--log-level=warn",
	}
	cp.etcd = startProcess(cp.t, filepath.Join(cp.bin, "etcd"), args, filepath.Join(cp.dir, "etcd.log"))
	cp.apiArgs = append(cp.apiArgs, "--etcd-servers="+client)
	cp.waitHealthy("etcd", cp.etcd, client+"/health", nil, "")
}

func (cp *ControlPlane) configureAPIServer(users []User) {
	var lines []string
	for i, u := range users {
		token := fmt.Sprintf("sllbrd-test-token-%d-%d", i, time.Now().UnixNano())
		cp.tokens[u.Name] = token
		lines = append(lines, fmt.Sprintf("%s,%s,%s,%q", token, u.Name, u.Name, strings.Join(u.Groups, ",")))
	}
	tokenFile := filepath.Join(cp.dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		cp.t.Fatalf("kubetest: %v", err)
	}
	port := freePort(cp.t, cp.addr)
	cp.host = "https://" + netip.AddrPortFrom(cp.addr, uint16(port)).String()
	cp.apiArgs = append(cp.apiArgs,
		"--bind-address="+cp.addr.String(), "--advertise-address="+cp.addr.String(),
		"--secure-port="+strconv.Itoa(port),
		"--tls-cert-file="+cp.pki.certFile, "--tls-private-key-file="+cp.pki.keyFile,
		"--cert-dir="+filepath.Join(cp.dir, "certs"),
		"--token-auth-file="+tokenFile, "--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+cp.pki.serviceAccountFile,
		"--service-account-signing-key-file="+cp.pki.serviceAccountFile,
		"--service-cluster-ip-range=10.96.0.0/24",
		"--disable-admission-plugins=ServiceAccount",
		"--enable-priority-and-fairness=false",
		"--shutdown-watch-termination-grace-period=2s",
		"--v=1",
	)
}

// StartAPIServer starts kube-apiserver (again) and waits until it is ready.
func (cp *ControlPlane) StartAPIServer() {
	cp.t.Helper()
	if cp.apiserver != nil && cp.apiserver.running() {
		cp.t.Fatalf("kubetest: kube-apiserver is already running")
	}
	cp.apiserver = startProcess(cp.t, filepath.Join(cp.bin, "kube-apiserver"), cp.apiArgs,
		filepath.Join(cp.dir, "kube-apiserver.log"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cp.pki.caPEM)
	cp.waitHealthy("kube-apiserver", cp.apiserver, cp.host+"/readyz", pool, cp.tokens[Admin.Name])
}

// StopAPIServer stops kube-apiserver and leaves etcd running.
func (cp *ControlPlane) StopAPIServer() {
	cp.t.Helper()
	if err := cp.apiserver.stop(); err != nil {
		cp.t.Logf("kubetest: stopping kube-apiserver: %v", err)
	}
}

// Host is the API server's URL.
func (cp *ControlPlane) Host() string { return cp.host }

// AdminConfig returns a client configuration of the Admin user.
func (cp *ControlPlane) AdminConfig() *rest.Config { return cp.Config(Admin.Name) }

// Config returns a client configuration of a user passed to Start.
func (cp *ControlPlane) Config(user string) *rest.Config {
	cp.t.Helper()
	token, ok := cp.tokens[user]
	if !ok {
		cp.t.Fatalf("kubetest: no user %q", user)
	}
	return cp.tokenConfig(token)
}

// tokenConfig returns a client configuration authenticating with token.
func (cp *ControlPlane) tokenConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            cp.host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.pki.caPEM},
		QPS:             100,
		Burst:           200,
	}
}

// waitHealthy polls url until it answers 200, the process exits or
// StartTimeout passes; failures end the test with the process's log tail.
func (cp *ControlPlane) waitHealthy(name string, p *process, url string, pool *x509.CertPool, token string) {
	cp.t.Helper()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
	}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	var last string
	for ctx.Err() == nil {
		if !p.running() {
			cp.t.Fatalf("kubetest: %s exited: %s", name, p.logTail())
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	cp.t.Fatalf("kubetest: %s not healthy within %v (last: %s): %s", name, StartTimeout, last, p.logTail())
}
