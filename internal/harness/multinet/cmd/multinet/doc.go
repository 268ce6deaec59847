// Command multinet is the CNI meta-plugin of the test node, the stand-in
// for Multus that package internal/harness/multinet implements; main only
// wires the process's environment, stdin and stdout to multinet.Main.
// Build it static (multinet.BuildPlugin, or CGO_ENABLED=0 go build) and
// install it as "multinet" in the runtime's CNI bin dir.
package main
