// Command image builds the sllbrd container image without a container
// daemon or a registry: `make image` runs it from the repository root.
//
// It compiles cmd/sllbrd as a static binary (CGO_ENABLED=0, -trimpath,
// -buildvcs=false, the version stamped with -X main.version) for GOOS=linux
// and the requested GOARCH, and writes one single-layer image, from scratch,
// as an OCI image layout directory and as an OCI archive (the same layout in
// a tar file).
//
// It promises:
//   - Reproducibility: the same source tree, Go toolchain, architecture and
//     stamp (version, revision, epoch) give byte-identical blobs, so the same
//     manifest digest and the same archive bytes. Nothing of the build machine
//     enters the image: every file and archive entry has a fixed owner and
//     mode and the epoch as its modification time, entries are sorted, gzip
//     headers carry no name and no time, and the JSON is written with fixed
//     field order and sorted keys.
//   - The epoch is SOURCE_DATE_EPOCH when set, else the commit time of HEAD;
//     the version is `git describe --tags --always --dirty --abbrev=12`
//     unless -version is given; the revision is the commit of HEAD.
//   - The layer holds only /sllbrd (root:root 0755), /etc/passwd and
//     /etc/group (root 0, nobody 65534, nonroot 65532), /root (0700),
//     /home/nonroot (65532:65532, 0700) and /tmp (1777): enough to run as
//     root (the default, User "0:0") or as the nonroot user. No CA bundle:
//     sllbrd talks only to the API server, whose CA comes with the
//     ServiceAccount.
//   - The config has Entrypoint ["/sllbrd"], the OCI labels source,
//     revision, version, created, licenses, title and description (repeated
//     as manifest annotations) and the architecture (64-bit GOARCHes only:
//     a dependency does not compile for 32-bit).
//
// Only the Go standard library is used: the image format needs a tar writer,
// gzip, SHA-256 and JSON, which a few hundred lines cover with full control
// over every byte; go-containerregistry or ko would add a large dependency
// tree (ko also wants a base image from a registry) for the same result.
package main
