// Command pause is the pod sandbox ("pause") program of the test node: the
// process containerd starts first in every pod to hold its namespaces.
//
// It promises:
//   - It does nothing but wait: no output, no files, no network.
//   - SIGTERM or SIGINT ends it with exit status 0. It handles both
//     explicitly, because as PID 1 of a PID namespace the kernel delivers
//     it no signal it has not installed a handler for.
//   - It reaps every child that exits, so when the pod shares its process
//     namespace (it is then PID 1 and inherits every orphan) no zombie
//     remains.
//   - It takes no arguments (exit status 2 with a message otherwise).
//
// It is built static (CGO_ENABLED=0) and packed by hack/image:
//
//	go run ./hack/image -main ./internal/harness/node/cmd/pause -name localhost/sllbrd-pause
package main
