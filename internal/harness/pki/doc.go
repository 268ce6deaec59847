// Package pki makes the keys and certificates of the test control planes
// (internal/harness/kubetest) and of the test node (internal/harness/node):
// a certificate authority that issues certificates for given names and
// usages, ECDSA P-256 keys, PEM files.
//
// Nothing here is for production: keys are written unencrypted, mode 0600.
package pki
