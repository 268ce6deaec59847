package kubetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ServiceAccount is the static-token user that authenticates like the
// ServiceAccount name of namespace ns: RBAC bindings to that ServiceAccount
// apply to it.
func ServiceAccount(ns, name string) User {
	return User{
		Name:   "system:serviceaccount:" + ns + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns},
	}
}

// Kubeconfig writes a kubeconfig file for a user passed to Start (server,
// CA and the user's token) and returns its path; it is removed with the
// test's temporary directory.
func (cp *ControlPlane) Kubeconfig(user string) string {
	cp.t.Helper()
	token, ok := cp.tokens[user]
	if !ok {
		cp.t.Fatalf("kubetest: no user %q", user)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: cp.host, CertificateAuthorityData: cp.pki.caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: user}
	cfg.CurrentContext = "kubetest"
	f, err := os.CreateTemp(cp.dir, "kubeconfig-*")
	if err != nil {
		cp.t.Fatalf("kubetest: %v", err)
	}
	f.Close()
	if err := clientcmd.WriteToFile(*cfg, f.Name()); err != nil {
		cp.t.Fatalf("kubetest: write kubeconfig: %v", err)
	}
	return f.Name()
}

// GatewayAPICRDs returns the files of the Gateway API CRDs sllbrd uses
// (GatewayClass and Gateway, standard channel) from the
// sigs.k8s.io/gateway-api module that go.mod requires.
func GatewayAPICRDs() ([]string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		return nil, fmt.Errorf("locate sigs.k8s.io/gateway-api: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard")
	return []string{
		filepath.Join(dir, "gateway.networking.k8s.io_gatewayclasses.yaml"),
		filepath.Join(dir, "gateway.networking.k8s.io_gateways.yaml"),
	}, nil
}
