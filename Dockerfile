# sllbrd: one static binary (no cgo) on a distroless base. Build from the
# repository root: docker build -t sllbrd .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/sllbrd ./cmd/sllbrd

# distroless/static: no shell, no libc, CA certificates and /etc/passwd only.
# sllbrd runs as root with every capability dropped but NET_ADMIN, NET_RAW and
# NET_BIND_SERVICE (deploy/sllbrd/deployment.yaml): a non-root user would not
# receive added capabilities (docs/deploy.md, "Capabilities").
FROM gcr.io/distroless/static-debian12
COPY --from=build /out/sllbrd /sllbrd
USER 0:0
ENTRYPOINT ["/sllbrd"]
