// Package sysctl checks, and where allowed sets, the kernel settings sllbrd
// needs in its network namespace (see Required): IP forwarding, layer-4
// multipath hashing, loose reverse-path filtering, fwmark reflection (so
// ICMP errors the node generates carry the offending packet's mark, which
// the nft package's PMTU rule relies on) and the ephemeral port range left
// free for BFD.
//
// Ensure reads every setting under /proc/sys (the root is injectable with
// WithRoot for tests). With set=false it only reports the settings whose
// value differs (name, want, have). With set=true it writes the wrong ones,
// reads them back and reports each as fixed or not; a setting that cannot
// be read or written makes Ensure return an error naming it, and the other
// settings are still handled. Values are compared with whitespace
// collapsed ("49152\t65535" equals "49152 65535").
//
// The settings under net/ belong to the network namespace of the calling
// thread at the moment the file is opened.
package sysctl
