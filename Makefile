# sllbrd — see README.md. `make help` lists the targets.
SHELL        := /bin/bash
GO           ?= go
BIN          := bin/sllbrd
PKGS         := ./...
# The memory limits `make footprint` holds sllbrd under (sweep: 128 MiB down to where it thrashes).
FOOTPRINT_LIMITS ?= sweep
FUZZTIME     ?= 10s
# Tests that time how long sllbrd takes to react (issue 11: a median under 50 ms from a write to
# the dataplane; they assert twice that and report the goal, `make bench-latency` measures it).
# `make test` runs them on their own, after the others, so that no other test binary (go test runs
# two at once here) competes with them for the CPU while they measure.
TIMED_TESTS  := ^(TestIntegrationFileEditLatency|TestIntegrationKubeAPIServer)$$
TIMED_PKG    := ./cmd/sllbrd/
# Tests that run on the Kubernetes node of `make node-up` (internal/harness/node): one node per host
# (fixed bridges and directories), so `make test` runs them last, one package at a time.
NODE_TESTS   := ^(TestIntegrationNodeUpDown|TestIntegrationCRINetNS|TestIntegrationOnNode)$$
NODE_PKGS    := ./internal/harness/node/ ./internal/cri/ ./internal/harness/e2e/onnode/
# The soak (cmd/sllbrd TestIntegrationSoak, docs/reliability.md): `make soak` runs it for
# SOAK_DURATION (SOAK_SEED replays a run's fault schedule; 0 draws one). `make test` runs it for
# 2 minutes with the race detector (in the test and in every sllbrd it starts), alone after the
# timed tests, with a schedule of its own each time: a failure prints the seed that replays it.
SOAK_TEST     := ^TestIntegrationSoak$$
SOAK_DURATION ?= 10m
SOAK_SEED     ?= 0
SOAK_TIMEOUT  ?= 60m
# Fuzz targets run for FUZZTIME each by `make test` (package:FuzzName).
FUZZ_TARGETS := $(shell cat hack/fuzz-targets.txt 2>/dev/null)

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: deps
deps: ## Install the system packages the tests and the demo use (root, apt).
	@hack/install-deps.sh

.PHONY: build
build: ## Build bin/sllbrd (static, no cgo).
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags="-s -w" -o $(BIN) ./cmd/sllbrd

.PHONY: image
image: ## Container image without a daemon, reproducible: OCI layout bin/sllbrd-image, archive bin/sllbrd-image.tar (honours GOARCH, VERSION, SOURCE_DATE_EPOCH).
	env -u GOOS -u GOARCH $(GO) run ./hack/image -arch "$$($(GO) env GOARCH)" -version "$(VERSION)" -layout bin/sllbrd-image -archive bin/sllbrd-image.tar

.PHONY: vet
vet: ## gofmt check and go vet.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	$(GO) vet $(PKGS)

# The switch of internal/harness/require: set, a missing integration prerequisite fails.
REQUIRE_ENV  := SLLBRD_REQUIRE_INTEGRATION
# Unit runs clear it (and its older name), so -short skips every integration test.
UNIT_ENV     := env -u $(REQUIRE_ENV) -u SLLBRD_REQUIRE_KUBE

.PHONY: unit
unit: ## Unit tests only (-short: no root, no network namespaces; integration tests skip).
	$(UNIT_ENV) $(GO) test -count=1 -short $(PKGS)

.PHONY: kube-assets
kube-assets: ## Build kube-apiserver and etcd from the Go module proxy (cached outside the repo; ~8 min once).
	@hack/kube-assets.sh

.PHONY: test
test: deps vet ## Every test, as root: unit tests with -race, then all tests with integration prerequisites (netns, nft, BIRD, a real kube-apiserver) required, the timed ones alone, a 2-minute soak with -race (SOAK_SEED), the node's (kubelet, containerd, deploy/) alone at the end, then short fuzzing.
	$(UNIT_ENV) $(GO) test -race -count=1 -short -timeout 20m $(PKGS)
	@assets=$$(hack/kube-assets.sh) && \
	  KUBEBUILDER_ASSETS=$$assets $(REQUIRE_ENV)=1 $(GO) test -count=1 -timeout 60m -skip '$(TIMED_TESTS)|$(NODE_TESTS)|$(SOAK_TEST)' $(PKGS)
	@assets=$$(hack/kube-assets.sh) && \
	  KUBEBUILDER_ASSETS=$$assets $(REQUIRE_ENV)=1 $(GO) test -count=1 -timeout 20m -v -run '$(TIMED_TESTS)' $(TIMED_PKG)
	@assets=$$(hack/kube-assets.sh) && \
	  KUBEBUILDER_ASSETS=$$assets $(REQUIRE_ENV)=1 $(GO) test -race -count=1 -timeout 30m -v -run '$(SOAK_TEST)' ./cmd/sllbrd/ \
	  -args -soak.duration=2m -soak.seed=$(SOAK_SEED)
	@$(MAKE) --no-print-directory test-node
	@hack/fuzz.sh $(FUZZTIME) $(FUZZ_TARGETS)

.PHONY: soak
soak: deps ## The soak (root): the whole system under traffic of every kind and a seeded schedule of overlapping faults for SOAK_DURATION (default 10m; SOAK_SEED=n replays a run); the report goes to bin/soak-report.md (docs/reliability.md).
	@mkdir -p bin && assets=$$(hack/kube-assets.sh) && \
	  KUBEBUILDER_ASSETS=$$assets $(REQUIRE_ENV)=1 $(GO) test -count=1 -timeout $(SOAK_TIMEOUT) -v -run '$(SOAK_TEST)' ./cmd/sllbrd/ \
	  -args -soak.duration=$(SOAK_DURATION) -soak.seed=$(SOAK_SEED) -soak.report=$(CURDIR)/bin/soak-report.md

.PHONY: test-node
test-node: deps ## The tests on a Kubernetes node (root): bring-up and take-down, then deploy/ as a user applies it with traffic end to end (about 10 min; uses a node of make node-up if one is up).
	@assets=$$(hack/kube-assets.sh) && \
	  KUBEBUILDER_ASSETS=$$assets $(REQUIRE_ENV)=1 $(GO) test -count=1 -p 1 -timeout 40m -v -run '$(NODE_TESTS)' $(NODE_PKGS)

.PHONY: node-up
node-up: deps ## A single-node Kubernetes cluster on this host (root): kubelet, containerd, kube-proxy, the seed's networks (docs/node.md); prints KUBECONFIG. Again: a new one.
	@assets=$$(hack/kube-assets.sh) && $(GO) run ./internal/harness/node/cmd/node up -bin $$assets

.PHONY: node-down
node-down: ## Remove the node of make node-up: pods, processes (by PID), mounts, cgroups, bridges, state.
	@$(GO) run ./internal/harness/node/cmd/node down

.PHONY: bench
bench: ## Benchmarks of the packet path (go test -bench, -benchmem).
	$(GO) test -run '^$$' -bench . -benchmem ./bench/ ./dataplane/... ./maglev/

.PHONY: bench-latency
bench-latency: deps ## Median time from a manifest edit to the dataplane applying it, in the lab (issue 11's goal: under 50 ms; root).
	$(REQUIRE_ENV)=1 $(GO) test -count=1 -run '^$$' -bench '^BenchmarkIntegrationFileEditLatency$$' -benchtime 21x ./cmd/sllbrd/

.PHONY: demo
demo: deps ## Build, run sllbrd in a network-namespace lab with BIRD on deploy/examples, send traffic, clean up (root). DEMO=cluster: the whole system in the lab; DEMO=node: on a Kubernetes node from deploy/ and the image.
	$(GO) run ./internal/harness/e2e/cmd/demo

.PHONY: bench-e2e
bench-e2e: deps ## Packets per second through sllbrd vs plain kernel forwarding in the lab, with CPU and RSS (root).
	$(GO) run ./internal/harness/e2e/cmd/benche2e

.PHONY: footprint
footprint: deps ## sllbrd's memory at rest in the lab (deploy/examples; files, API server, static): VmRSS, PSS, cgroup, Go runtime, and the memory limits it runs under (root). FOOTPRINT_COMPARE=name=path,... adds binaries; FOOTPRINT_LIMITS=sweep|MiB,... the limits.
	@assets=$$(hack/kube-assets.sh) && KUBEBUILDER_ASSETS=$$assets SLLBRD_REQUIRE_INTEGRATION=1 \
	  SLLBRD_FOOTPRINT_COMPARE=$(FOOTPRINT_COMPARE) SLLBRD_FOOTPRINT_LIMITS=$(FOOTPRINT_LIMITS) $(GO) test -count=1 -v -run '^TestIntegrationFootprint$$' ./cmd/sllbrd/

.PHONY: fuzz
fuzz: ## Longer fuzzing: FUZZTIME=5m make fuzz.
	@hack/fuzz.sh $(FUZZTIME) $(FUZZ_TARGETS)

.PHONY: clean
clean: ## Remove build output.
	rm -rf bin
