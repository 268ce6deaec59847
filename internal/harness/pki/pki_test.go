package pki

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"testing"
	"time"
)

// TestIssuedCertificateVerifies: a serving certificate verifies against
// the CA for its names and usage, and pairs with its key.
func TestIssuedCertificateVerifies(t *testing.T) {
	ca, err := NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "server", Organization: []string{"group"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"kubernetes.default"},
		IPAddresses: []net.IP{net.IPv4(10, 96, 0, 1)},
	})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca.PEM) {
		t.Fatal("the CA's PEM holds no certificate")
	}
	for _, name := range []string{"kubernetes.default", "10.96.0.1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "other", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Errorf("verifies for a name it does not have")
	}
	if leaf.NotAfter.After(time.Now().Add(time.Hour)) || leaf.Subject.Organization[0] != "group" || !ca.Cert.IsCA {
		t.Errorf("leaf %v until %v, CA %v", leaf.Subject, leaf.NotAfter, ca.Cert.IsCA)
	}
}
