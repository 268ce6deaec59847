#!/usr/bin/env bash
# Run each fuzz target (package:FuzzName) for a bounded time.
#
# A finding fails the run: go test prints "Failing input written to" and
# leaves the input under testdata/fuzz. One failure is not a finding: Go's
# fuzz coordinator (before Go 1.27, golang/go#75804) may report a bare
# "context deadline exceeded" when -fuzztime ends while a worker is still
# busy, on a loaded machine. Such a run is accepted only when no input was
# written and the target's corpus then passes when replayed.
set -euo pipefail
time=$1; shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for target in "$@"; do
	pkg=${target%%:*} name=${target##*:}
	echo "fuzz $pkg $name for $time"
	if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$time" "./$pkg" 2>&1 | tee "$log"; then
		continue
	fi
	if grep -q 'Failing input written to' "$log" || ! grep -q 'context deadline exceeded' "$log" ||
		[ "$(grep -c -e '^--- FAIL' -e 'panic:' "$log")" != 1 ]; then
		exit 1
	fi
	echo "fuzz $pkg $name: the fuzz coordinator's deadline race (golang/go#75804), no input written; replaying the corpus"
	go test -count=1 -run "^${name}\$" "./$pkg"
done
