// Package require decides whether an integration test runs, skips or fails
// when what it needs is missing. It is the one switch of the test suite:
//
//   - With SLLBRD_REQUIRE_INTEGRATION set (make test sets it, and so CI), a
//     missing prerequisite (root, a program such as nft or bird, the
//     kube-apiserver assets) FAILS the test, and -short does not skip it:
//     CI cannot pass by skipping.
//   - Without it, a missing prerequisite skips the test with a message saying
//     what is missing, and -short skips every integration test, so a
//     developer without root can run `make unit`.
//
// Every integration test calls one of these helpers before touching the
// kernel, BIRD or the control plane.
package require
