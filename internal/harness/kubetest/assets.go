package kubetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sllbrd/sllbrd/internal/harness/require"
)

// Versions hack/kube-assets.sh builds by default.
const (
	KubeVersion = "v1.33.13"
	EtcdVersion = "v3.5.35"
)

// assetsDir returns the directory holding etcd and kube-apiserver, or "".
func assetsDir() string {
	var dirs []string
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		dirs = append(dirs, d)
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, ".cache")
		}
	}
	if cache != "" {
		dirs = append(dirs, filepath.Join(cache, "sllbrd", "kube-assets",
			"kube-"+KubeVersion+"-etcd-"+EtcdVersion, "bin"))
	}
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "etcd")) && isExecutable(filepath.Join(d, "kube-apiserver")) {
			return d
		}
	}
	return ""
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// requireAssets returns the assets directory or ends the test (a skip, or
// a failure when require.Strict).
func requireAssets(t testing.TB) string {
	t.Helper()
	require.Integration(t)
	d := assetsDir()
	if d == "" {
		require.Missing(t, "kube-apiserver/etcd not found: run `export KUBEBUILDER_ASSETS=$(hack/kube-assets.sh)`")
	}
	return d
}

// NodeBinaries are the binaries the node of internal/harness/node runs
// besides etcd and kube-apiserver; hack/kube-assets.sh builds them too.
var NodeBinaries = []string{"kubelet", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubectl"}

// RequireNodeAssets returns the assets directory when it holds etcd,
// kube-apiserver and NodeBinaries, or ends the test (a skip, or a failure
// when require.Strict).
func RequireNodeAssets(t testing.TB) string {
	t.Helper()
	d := requireAssets(t)
	for _, b := range NodeBinaries {
		if !isExecutable(filepath.Join(d, b)) {
			require.Missing(t, "%s not found in %s: run hack/kube-assets.sh", b, d)
		}
	}
	return d
}
