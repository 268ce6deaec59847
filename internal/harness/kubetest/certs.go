package kubetest

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/sllbrd/sllbrd/internal/harness/pki"
)

// pkiFiles holds the files of the test control plane's keys and certificates.
type pkiFiles struct {
	caPEM              []byte
	certFile, keyFile  string // kube-apiserver serving certificate
	serviceAccountFile string // service-account signing key (private; the public half is derived)
}

// newPKI writes a CA, a serving certificate signed by it for loopback and
// addr, and a service-account key into dir.
func newPKI(dir string, addr netip.Addr) (*pkiFiles, error) {
	ca, err := pki.NewCA("sllbrd-test-ca", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if !addr.IsLoopback() {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.IP(addr.AsSlice()))
	}
	cert, key, err := ca.Issue(tmpl)
	if err != nil {
		return nil, err
	}
	saKey, err := pki.NewKey()
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	p := &pkiFiles{
		caPEM:              ca.PEM,
		certFile:           filepath.Join(dir, "apiserver.crt"),
		keyFile:            filepath.Join(dir, "apiserver.key"),
		serviceAccountFile: filepath.Join(dir, "sa.key"),
	}
	if err := os.WriteFile(p.certFile, cert, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.keyFile, key, 0o600); err != nil {
		return nil, err
	}
	if err := pki.WriteKey(p.serviceAccountFile, saKey); err != nil {
		return nil, err
	}
	return p, nil
}
