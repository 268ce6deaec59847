#!/usr/bin/env bash
# Install the Debian packages sllbrd's integration tests and demo need, when
# missing. Idempotent; needs root and apt. Without root it only reports.
set -euo pipefail
need=()
command -v ip >/dev/null        || need+=(iproute2)
command -v nft >/dev/null       || need+=(nftables)
command -v iptables-nft >/dev/null || need+=(iptables)
command -v bird >/dev/null      || need+=(bird2)
command -v tcpdump >/dev/null   || need+=(tcpdump)
command -v skopeo >/dev/null    || need+=(skopeo)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
	echo "install-deps: missing ${need[*]} (need root and apt); integration tests will skip" >&2
	exit 0
fi
echo "install-deps: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq </dev/null
apt-get install -y -qq --no-install-recommends "${need[@]}" </dev/null >/dev/null
# bird2's package starts a system daemon; sllbrd's tests run their own.
if command -v systemctl >/dev/null; then systemctl disable --now bird >/dev/null 2>&1 || true; fi
pkill -x bird 2>/dev/null || true
