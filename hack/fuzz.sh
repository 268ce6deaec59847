#!/usr/bin/env bash
# Run each fuzz target (package:FuzzName) for a bounded time.
set -euo pipefail
time=$1; shift
for target in "$@"; do
	pkg=${target%%:*} name=${target##*:}
	echo "fuzz $pkg $name for $time"
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$time" "./$pkg"
done
