package node

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/sllbrd/sllbrd/internal/harness/pki"
)

// certValidity is how long the node's certificates last: a node left
// running for a user outlives any test, not a month.
const certValidity = 30 * 24 * time.Hour

// identity is a client certificate's subject: the user and groups the API
// server (or the kubelet) authenticates it as.
type identity struct {
	file   string // base name in pki/: <file>.crt, <file>.key, <file>.kubeconfig
	user   string
	groups []string
}

// The node's client identities. kube-proxy, the controller manager and the
// scheduler get the users the API server's bootstrap RBAC binds; multinet
// (the test-only Multus) gets its own user, bound by bootstrap objects.
var (
	adminID      = identity{file: "admin", user: "sllbrd-node-admin", groups: []string{"system:masters"}}
	kubeletID    = identity{file: "kubelet", user: "system:node:" + Name, groups: []string{"system:nodes"}}
	apiClientID  = identity{file: "apiserver-kubelet-client", user: "kube-apiserver-kubelet-client", groups: []string{"system:masters"}}
	kcmID        = identity{file: "kube-controller-manager", user: "system:kube-controller-manager"}
	schedulerID  = identity{file: "kube-scheduler", user: "system:kube-scheduler"}
	proxyID      = identity{file: "kube-proxy", user: "system:kube-proxy"}
	multinetID   = identity{file: "multinet", user: "sllbrd-node:multinet"}
	clientIDs    = []identity{adminID, kubeletID, apiClientID, kcmID, schedulerID, proxyID, multinetID}
	kubeconfigOf = []identity{adminID, kubeletID, kcmID, schedulerID, proxyID, multinetID}
)

// writePKI writes the CA, the serving certificates of kube-apiserver and of
// the kubelet, a client certificate and kubeconfig per identity, and the
// service-account signing key into d's pki directory.
func writePKI(d Dirs) error {
	if err := os.MkdirAll(d.pki(""), 0o700); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	ca, err := pki.NewCA("sllbrd-node-ca", certValidity)
	if err != nil {
		return err
	}
	if err := os.WriteFile(d.pki("ca.crt"), ca.PEM, 0o644); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := pki.WriteKey(d.pki("ca.key"), ca.Key); err != nil {
		return err
	}
	apiserver := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.IP(NodeIP.AsSlice()), net.IP(KubernetesServiceIP.AsSlice()), net.IPv4(127, 0, 0, 1)},
	}
	kubelet := &x509.Certificate{
		Subject:     pkix.Name{CommonName: Name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{Name},
		IPAddresses: []net.IP{net.IP(NodeIP.AsSlice())},
	}
	for name, tmpl := range map[string]*x509.Certificate{"apiserver": apiserver, "kubelet-serving": kubelet} {
		if err := issue(d, ca, name, tmpl); err != nil {
			return err
		}
	}
	for _, id := range clientIDs {
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: id.user, Organization: id.groups},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if err := issue(d, ca, id.file, tmpl); err != nil {
			return err
		}
	}
	for _, id := range kubeconfigOf {
		if err := writeKubeconfig(d, id, ca.PEM); err != nil {
			return err
		}
	}
	sa, err := pki.NewKey()
	if err != nil {
		return fmt.Errorf("pki: service-account key: %w", err)
	}
	return pki.WriteKey(d.pki("sa.key"), sa)
}

// issue has ca sign tmpl and writes <name>.crt and <name>.key.
func issue(d Dirs, ca *pki.CA, name string, tmpl *x509.Certificate) error {
	cert, key, err := ca.Issue(tmpl)
	if err != nil {
		return err
	}
	if err := os.WriteFile(d.pki(name+".crt"), cert, 0o644); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := os.WriteFile(d.pki(name+".key"), key, 0o600); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}

// writeKubeconfig writes <id>.kubeconfig in pki/ (the administrator's also
// as Dirs.Kubeconfig) with the identity's certificate and key inline.
func writeKubeconfig(d Dirs, id identity, caPEM []byte) error {
	crt, err := os.ReadFile(d.pki(id.file + ".crt"))
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	key, err := os.ReadFile(d.pki(id.file + ".key"))
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[Name] = &clientcmdapi.Cluster{Server: apiServerURL(), CertificateAuthorityData: caPEM}
	cfg.AuthInfos[id.user] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
	cfg.Contexts[Name] = &clientcmdapi.Context{Cluster: Name, AuthInfo: id.user, Namespace: Namespace}
	cfg.CurrentContext = Name
	path := d.pki(id.file + ".kubeconfig")
	if id.file == adminID.file {
		path = d.Kubeconfig()
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("pki: %s: %w", filepath.Base(path), err)
	}
	return os.Chmod(path, 0o600)
}

// apiServerURL is kube-apiserver's address for every client of the node.
func apiServerURL() string {
	return "https://" + net.JoinHostPort(NodeIP.String(), fmt.Sprint(APIServerPort))
}

// readCA reads the CA certificate of a node Up wrote.
func readCA(d Dirs) ([]byte, error) {
	b, err := os.ReadFile(d.pki("ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if blk, _ := pem.Decode(b); blk == nil || blk.Type != "CERTIFICATE" {
		return nil, errors.New("pki: ca.crt holds no certificate")
	}
	return b, nil
}
