#!/usr/bin/env bash
# Regenerate the eBPF datapath's object and Go bindings of package $1 (as
# `make bpf` does: go generate, bpf2go pinned by go.mod, clang) into a
# temporary directory and compare them byte for byte with the files in the
# package. Fails when they differ, when one is missing, or when the package
# holds a generated file the generator no longer writes: the committed
# object must be what its C source builds to. Writes nothing in the tree.
set -euo pipefail
pkg=${1:?usage: bpf-check.sh package-dir}
for tool in clang llvm-strip; do
	command -v "$tool" >/dev/null || { echo "bpf-check: needs $tool (make deps installs it)" >&2; exit 1; }
done
[ -f /usr/include/bpf/bpf_helpers.h ] || { echo "bpf-check: needs libbpf-dev's bpf_helpers.h (make deps installs it)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
BPFPATH_OUTPUT_DIR=$tmp go generate "$pkg"
status=0
for f in "$tmp"/*; do
	name=$(basename "$f")
	if [ ! -f "$pkg/$name" ]; then
		echo "bpf-check: $pkg/$name is missing" >&2; status=1
	elif ! cmp -s "$f" "$pkg/$name"; then
		echo "bpf-check: $pkg/$name differs from what its source builds to" >&2; status=1
	fi
done
for f in "$pkg"/*_bpfel.* "$pkg"/*_bpfeb.*; do
	[ -e "$f" ] || continue
	[ -e "$tmp/$(basename "$f")" ] || { echo "bpf-check: $f is no longer generated" >&2; status=1; }
done
if [ "$status" != 0 ]; then
	echo "bpf-check: run make bpf and commit the result (built here with $(clang --version | head -n1); docs/bpf.md)" >&2
	exit 1
fi
echo "bpf-check: $pkg's generated files are current"
