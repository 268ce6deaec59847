#!/usr/bin/env bash
# Install the Debian packages sllbrd's integration tests and demo need, when
# missing. Idempotent; needs root and apt. Without root it only reports.
#
# Debian's bird2 package starts a system BIRD daemon; sllbrd's tests run
# their own, so the packaged daemon is stopped after bird2 is installed, and
# nothing else: other BIRD processes on the host (other tests, other users)
# are never signalled. The packaged daemon is found by its systemd unit
# (bird.service), by its control socket (BIRD_CTL, default
# /run/bird/bird.ctl: it is asked to shut down with `birdc down`; Debian's
# init script writes no pid file and its own "stop" kills every
# /usr/sbin/bird by name, so it is not used), and by a pid file if one
# exists (BIRD_PIDFILE, default /run/bird/bird.pid) naming a process that
# runs the packaged binary (BIRD_DAEMON, default /usr/sbin/bird).
set -euo pipefail

BIRD_CTL=${BIRD_CTL:-/run/bird/bird.ctl}
BIRD_PIDFILE=${BIRD_PIDFILE:-/run/bird/bird.pid}
BIRD_DAEMON=${BIRD_DAEMON:-/usr/sbin/bird}

log() { echo "install-deps: $*" >&2; }

# stop_packaged_bird stops the daemon the bird2 package started, only it.
stop_packaged_bird() {
	if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
		systemctl disable --now bird.service >/dev/null 2>&1 || log "could not stop bird.service"
	fi
	if [ -S "$BIRD_CTL" ] && command -v birdc >/dev/null; then
		if birdc -s "$BIRD_CTL" down >/dev/null 2>&1; then
			# BIRD removes its control socket when it has shut down.
			for _ in $(seq 100); do [ -e "$BIRD_CTL" ] || break; sleep 0.1; done
			if [ -e "$BIRD_CTL" ]; then log "BIRD on $BIRD_CTL did not shut down within 10 s"; fi
		fi
	fi
	if [ -f "$BIRD_PIDFILE" ]; then
		local pid
		pid=$(head -n1 "$BIRD_PIDFILE")
		# Only a live process running the packaged binary: a stale pid file
		# may name a pid that now belongs to someone else.
		if [[ $pid =~ ^[0-9]+$ ]] &&
			[ "$(readlink -f "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$BIRD_DAEMON")" ]; then
			kill "$pid" 2>/dev/null || true
		fi
	fi
	return 0
}

need=()
command -v ip >/dev/null        || need+=(iproute2)
command -v nft >/dev/null       || need+=(nftables)
command -v iptables-nft >/dev/null || need+=(iptables)
command -v bird >/dev/null      || need+=(bird2)
command -v tcpdump >/dev/null   || need+=(tcpdump)
command -v ping >/dev/null      || need+=(iputils-ping) # the ICMP liveness tests' reference
command -v sysctl >/dev/null    || need+=(procps)
command -v skopeo >/dev/null    || need+=(skopeo)
command -v gcc >/dev/null       || need+=(gcc libc6-dev) # go test -race needs cgo
# The eBPF datapath's object (make bpf, make bpf-check; docs/bpf.md): clang
# compiles it, llvm-strip strips its DWARF (keeping BTF), libbpf-dev has
# bpf_helpers.h.
command -v clang >/dev/null      || need+=(clang)
command -v llvm-strip >/dev/null || need+=(llvm)
[ -f /usr/include/bpf/bpf_helpers.h ] || need+=(libbpf-dev)
# The Kubernetes node of `make node-up` and its tests: the container runtime
# and the CNI plugins (bridge, host-local, static, ... in /usr/lib/cni).
command -v containerd >/dev/null || need+=(containerd)
command -v runc >/dev/null      || need+=(runc)
[ -x /usr/lib/cni/bridge ]      || need+=(containernetworking-plugins)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
	log "missing ${need[*]} (need root and apt); integration tests will skip, or fail with SLLBRD_REQUIRE_INTEGRATION set"
	exit 0
fi
log "installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq </dev/null
apt-get install -y -qq --no-install-recommends "${need[@]}" </dev/null >/dev/null
if [[ " ${need[*]} " == *" bird2 "* ]]; then
	stop_packaged_bird
fi
# Debian's containerd package enables a system containerd; the node of
# `make node-up` runs its own, with its own socket and state.
if [[ " ${need[*]} " == *" containerd "* ]] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
	systemctl disable --now containerd.service >/dev/null 2>&1 || log "could not stop containerd.service"
fi
