package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"time"
)

// CA is a certificate authority.
type CA struct {
	Cert     *x509.Certificate
	Key      *ecdsa.PrivateKey
	PEM      []byte // the certificate
	validity time.Duration
}

// NewCA makes a self-signed CA named cn; it and what it issues are valid
// from an hour ago (clock skew) for validity.
func NewCA(cn string, validity time.Duration) (*CA, error) {
	key, err := NewKey()
	if err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: cn},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	c := &CA{Key: key, validity: validity}
	der, err := c.sign(tmpl, tmpl, key)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	if c.Cert, err = x509.ParseCertificate(der); err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	c.PEM = certPEM(der)
	return c, nil
}

// Issue signs tmpl (its subject, extended usages, names and addresses)
// with a new key and returns the certificate and the key, PEM-encoded.
func (c *CA) Issue(tmpl *x509.Certificate) (cert, key []byte, err error) {
	k, err := NewKey()
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %s key: %w", tmpl.Subject.CommonName, err)
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := c.sign(tmpl, c.Cert, k)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %s certificate: %w", tmpl.Subject.CommonName, err)
	}
	key, err = KeyPEM(k)
	if err != nil {
		return nil, nil, err
	}
	return certPEM(der), key, nil
}

func (c *CA) sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = serial, now.Add(-time.Hour), now.Add(c.validity)
	signer := key
	if parent != tmpl {
		signer = c.Key
	}
	return x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
}

// NewKey makes an ECDSA P-256 key.
func NewKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

// KeyPEM encodes a key as an "EC PRIVATE KEY" PEM block.
func KeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// WriteKey writes a key as PEM, readable by its owner only.
func WriteKey(path string, key *ecdsa.PrivateKey) error {
	b, err := KeyPEM(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
