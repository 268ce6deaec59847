// Package images builds the container images of the test node with the
// project's own image tool (hack/image, the builder behind `make image`):
// sllbrd as `make image` makes it, the pod sandbox image (pause,
// internal/harness/node/cmd/pause) and the test application (labresponder,
// internal/harness/lab/cmd/labresponder).
//
// Build runs the tool as `go run github.com/sllbrd/sllbrd/hack/image
// -json -reuse ...`, once per image, from a directory of the module. Running
// the tool rather than linking its code keeps one builder, the one `make
// image` runs, with its flags as the only interface: hack/image stays a
// command (package main, the standard library only) and its JSON report is
// all this package reads.
//
// Promises:
//   - Each image is an OCI layout <Dir>/<binary>-image and an OCI archive
//     <Dir>/<binary>-image.tar, named <name>:<tag> where the tag is the
//     one the archive's index.json carries (ref.name), which `ctr images
//     import --base-name <name>` turns into the reference Ref.
//   - The three share one stamp: the version, revision and epoch that
//     sllbrd's build resolved (git, VERSION, SOURCE_DATE_EPOCH as for `make
//     image`) are given to the other two.
//   - A build whose inputs did not change is kept (Image.Reused): the tool
//     still compiles the binary, which the go command's cache makes cheap,
//     and keeps the image when the binary's bytes, the image's settings and
//     the tool itself are those recorded beside the layout and every blob and
//     the archive still have their recorded digests. That skips compressing
//     the layer, the costly part (seconds for sllbrd).
//   - Builds into one Dir are serialised by a lock file (<Dir>/.lock), so
//     tests that share a Dir build once and reuse.
package images
