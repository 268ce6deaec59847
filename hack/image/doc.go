// Command image builds the sllbrd container image without a container
// daemon or a registry: `make image` runs it from the repository root. It
// packs any other main package of the module the same way (-main, -name):
// the test node's pause and test application images
// (internal/harness/images).
//
// It compiles the main package (default cmd/sllbrd) as a static binary
// (CGO_ENABLED=0, -trimpath, -buildvcs=false, the version stamped with -X
// main.version) for GOOS=linux and the requested GOARCH, and writes one
// single-layer image, from scratch, as an OCI image layout directory and
// as an OCI archive (the same layout in a tar file).
//
// It promises:
//   - Reproducibility: the same source tree, Go toolchain, architecture,
//     main package and stamp (version, revision, epoch) give byte-identical
//     blobs, so the same manifest digest and the same archive bytes. Nothing
//     of the build machine enters the image: every file and archive entry
//     has a fixed owner and mode and the epoch as its modification time,
//     entries are sorted, gzip headers carry no name and no time, and the
//     JSON is written with fixed field order and sorted keys.
//   - The epoch is SOURCE_DATE_EPOCH when set, else the commit time of HEAD;
//     the version is `git describe --tags --always --dirty --abbrev=12`
//     unless -version is given; the revision is the commit of HEAD.
//   - The layer holds only /<binary> (root:root 0755; /sllbrd by default,
//     the main package's last element), /etc/passwd and /etc/group (root 0,
//     nobody 65534, nonroot 65532), /root (0700), /home/nonroot
//     (65532:65532, 0700) and /tmp (1777): enough to run as root (the
//     default, User "0:0") or as the nonroot user. No CA bundle: sllbrd
//     talks only to the API server, whose CA comes with the ServiceAccount.
//   - The config has Entrypoint ["/<binary>"], the OCI labels source,
//     revision, version, created, licenses and title (the binary's name),
//     and for sllbrd alone a description, repeated as manifest annotations,
//     and the architecture (64-bit GOARCHes only: a dependency of sllbrd
//     does not compile for 32-bit). index.json names the image by its tag
//     (org.opencontainers.image.ref.name); -name is the repository of the
//     push line and the -json report (default ghcr.io/sllbrd/sllbrd for
//     sllbrd, required for any other -main).
//   - Without flags the output is what `make image` always wrote:
//     bin/sllbrd-image and bin/sllbrd-image.tar (bin/<binary>-image[.tar]
//     for another -main).
//   - -reuse keeps the layout and the archive when the record beside the
//     layout (<layout>.inputs.json) holds the same inputs (this program's
//     executable, the binary's bytes, the image's settings) and every blob
//     and the archive still have their recorded digests: the binary is
//     compiled (the go command's cache makes that cheap) but the layer is
//     not compressed again. -json prints the result as one JSON object.
//
// Only the Go standard library is used: the image format needs a tar writer,
// gzip, SHA-256 and JSON, which a few hundred lines cover with full control
// over every byte; go-containerregistry or ko would add a large dependency
// tree (ko also wants a base image from a registry) for the same result.
package main
