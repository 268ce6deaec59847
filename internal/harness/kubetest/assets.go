package kubetest

import (
	"os"
	"path/filepath"
	"testing"
)

// Versions hack/kube-assets.sh builds by default.
const (
	KubeVersion = "v1.33.13"
	EtcdVersion = "v3.5.35"
)

// RequireEnv, when set, turns a missing-binaries skip into a failure.
const RequireEnv = "SLLBRD_REQUIRE_KUBE"

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

// requireAssets returns the assets directory or ends the test.
func requireAssets(t testing.TB) string {
	t.Helper()
	if testing.Short() && os.Getenv(RequireEnv) == "" {
		t.Skip("control-plane test skipped in -short mode")
	}
	d := assetsDir()
	if d != "" {
		return d
	}
	msg := "kube-apiserver/etcd not found: run `export KUBEBUILDER_ASSETS=$(hack/kube-assets.sh)`"
	if os.Getenv(RequireEnv) != "" {
		t.Fatalf("%s (%s is set)", msg, RequireEnv)
	}
	t.Skip(msg)
	return ""
}
