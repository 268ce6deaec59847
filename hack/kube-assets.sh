#!/usr/bin/env bash
# Build the Kubernetes binaries from the Go module proxy (there are no Debian
# packages for them) and print the directory holding them, ready for
# KUBEBUILDER_ASSETS: etcd and kube-apiserver (the control plane of the
# integration tests), and kubelet, kube-controller-manager, kube-scheduler,
# kube-proxy and kubectl (the node of `make node-up`):
#
#   export KUBEBUILDER_ASSETS=$(hack/kube-assets.sh)
#
# The scratch modules live in a cache directory OUTSIDE the repository
# (${XDG_CACHE_HOME:-$HOME/.cache}/sllbrd/kube-assets/<versions>), so the
# repository's go.mod is never touched. The first build takes several minutes
# (kube-apiserver about 7, the node's binaries after it a few more) and about
# 2 GB of RAM; later runs find the binaries and return at once.
#
# Versions: KUBE_VERSION (k8s.io/kubernetes, default v1.33.13) and
# ETCD_VERSION (go.etcd.io/etcd/server/v3, default v3.5.35). Build output goes
# to stderr; only the directory is printed on stdout.
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.33.13}
ETCD_VERSION=${ETCD_VERSION:-v3.5.35}
GO=${GO:-go}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/sllbrd/kube-assets
dir=$cache/kube-$KUBE_VERSION-etcd-$ETCD_VERSION
bin=$dir/bin

log() { echo "kube-assets: $*" >&2; }

# Run go outside any workspace or vendoring the caller may have set up.
gorun() { (cd "$1" && shift && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 "$GO" "$@") >&2; }

# The binaries of k8s.io/kubernetes built by build_kube, kube-apiserver first.
kube_binaries=(kube-apiserver kubelet kube-controller-manager kube-scheduler kube-proxy kubectl)

# build_kube builds the missing binaries of k8s.io/kubernetes in one scratch
# module; one go build for all of them shares the compilation of their common
# packages.
build_kube() {
	local mod=$dir/kube-apiserver-src
	mkdir -p "$mod"
	# k8s.io/kubernetes replaces every staging module with ./staging/...; a
	# module outside that tree must replace each with its published version
	# (v1.Y.Z -> v0.Y.Z). Take the list from that version's own go.mod.
	local gomod staging
	gomod=$(cd "$mod" && GOWORK=off "$GO" mod download -json "k8s.io/kubernetes@$KUBE_VERSION" |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
	[ -f "$gomod" ] || { log "cannot download k8s.io/kubernetes@$KUBE_VERSION"; exit 1; }
	staging=v0.${KUBE_VERSION#v1.}
	{
		echo "module sllbrd.local/kube-assets"
		echo
		echo "go 1.24"
		echo
		echo "require k8s.io/kubernetes $KUBE_VERSION"
		echo
		echo "replace ("
		sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\t\1 => \1 '"$staging"'#p' "$gomod"
		echo ")"
	} >"$mod/go.mod"
	local pkg=k8s.io/component-base/version
	local ver=${KUBE_VERSION#v}
	local major=${ver%%.*} rest=${ver#*.}
	local minor=${rest%%.*}
	local ldflags="-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major"
	ldflags+=" -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
	ldflags+=" -X $pkg.buildDate=1970-01-01T00:00:00Z"
	local pkgs=()
	for b in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
	log "building $* $KUBE_VERSION (cold: ~7 min for kube-apiserver, a few more for the others; ~2 GB RAM)"
	gorun "$mod" build -trimpath -ldflags "$ldflags" -o "$bin/" "${pkgs[@]}"
}

build_etcd() {
	local mod=$dir/etcd-src
	mkdir -p "$mod"
	printf 'module sllbrd.local/etcd-assets\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 %s\n' \
		"$ETCD_VERSION" >"$mod/go.mod"
	log "building etcd $ETCD_VERSION"
	gorun "$mod" build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3
}

mkdir -p "$bin"
[ -x "$bin/etcd" ] || build_etcd
missing=()
for b in "${kube_binaries[@]}"; do [ -x "$bin/$b" ] || missing+=("$b"); done
[ ${#missing[@]} -eq 0 ] || build_kube "${missing[@]}"
echo "$bin"
