package bpfpath

// The program's object and its Go bindings (ingress_bpfel.*, ingress_bpfeb.*)
// are generated from bpf/ by bpf2go, pinned by go.mod, and committed: `make
// bpf` regenerates them, and `make bpf-check` (run by make test) fails when
// regenerating changes a committed byte. BPFPATH_OUTPUT_DIR, unset by
// default, sends the output elsewhere (the check uses it). docs/bpf.md
// says what the build needs and why its flags are fixed.
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -output-dir=$BPFPATH_OUTPUT_DIR -cc clang -cflags "-mcpu=v3 -Wall -Werror" -type status -type route_set -type route -type cidr -type port_range -type table_entry -type vip_key -type count -type action -type endpoint_key -type slot_key -type next_hop -type xdp_iface ingress bpf/ingress.c
