# shardgate. `make test` and `make demo` do all the set-up on a fresh machine.
include hack/versions.env

SHELL      := /usr/bin/env bash
GO         ?= go
BIN        := $(CURDIR)/bin
VERSION    ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
COMMIT     ?= $(shell git rev-parse HEAD 2>/dev/null)
VERSION_PKG := github.com/shardgate/shardgate/internal/version
LDFLAGS    := -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT)
GOTESTFLAGS ?=
export GOTOOLCHAIN := local
# One build variant for everything make runs (tests, vet, the binary, the
# image, the envtest assets): static and path-trimmed, so that what the Go
# build cache holds for one serves all of them. Nothing here needs cgo.
export CGO_ENABLED ?= 0
export GOFLAGS ?= -trimpath

.PHONY: all build image test bench unit-test demo envtest-assets controller-gen crds verify-generated lint fmt vet clean

all: build

## build: the shardgate binary into bin/shardgate
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/shardgate ./cmd/shardgate

## image: the controller image, offline (no Docker): a static linux binary per platform
## (IMAGE_PLATFORMS) on an empty base, uid 65532, tagged $(IMAGE_REPO):$(IMAGE_TAG) (the
## chart's appVersion), its binaries reporting that tag as their version. It writes a
## multi-platform OCI image index as an OCI layout (bin/image/oci) and as a tar of that
## layout (bin/image/shardgate-oci.tar), and one `docker load` / `kind load image-archive`
## tarball per platform (bin/image/shardgate-<arch>.tar), and prints the index digest:
## the digest a registry shows after the push, and the chart's image.digest
IMAGE_REPO      ?= ghcr.io/shardgate/shardgate
APP_VERSION     := $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$$/\1/p' charts/shardgate/Chart.yaml)
IMAGE_TAG       ?= $(APP_VERSION)
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_LDFLAGS   := -s -w -X $(VERSION_PKG).Version=$(IMAGE_TAG) -X $(VERSION_PKG).Commit=$(COMMIT)
image:
	@mkdir -p $(BIN)/image
	@set -e; for p in $(IMAGE_PLATFORMS); do \
		os=$${p%%/*}; arch=$${p#*/}; \
		echo "go build $$os/$$arch -> $(BIN)/image/shardgate-$$os-$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(IMAGE_LDFLAGS)' \
			-o $(BIN)/image/shardgate-$$os-$$arch ./cmd/shardgate; \
	done
	$(GO) run ./hack/image \
		$(foreach p,$(IMAGE_PLATFORMS),--binary $(p)=$(BIN)/image/shardgate-$(subst /,-,$(p)) \
			--docker-archive $(p)=$(BIN)/image/shardgate-$(notdir $(p)).tar) \
		--version $(IMAGE_TAG) --revision "$(COMMIT)" \
		--created "$$(git log -1 --format=%ct 2>/dev/null || echo 0)" \
		--tag $(IMAGE_REPO):$(IMAGE_TAG) --layout $(BIN)/image/oci --oci-archive $(BIN)/image/shardgate-oci.tar

## envtest-assets: kube-apiserver, etcd, controller-manager, scheduler, KWOK, MetalLB, Pebble, cert-manager, CRDs,
## kubectl, helm, helm-docs and crd-ref-docs into bin/
envtest-assets:
	./hack/envtest-assets.sh all

controller-gen:
	./hack/envtest-assets.sh controller-gen

## helm, crd-ref-docs, helm-docs, kubectl: one tool each into bin/ (also part of envtest-assets)
.PHONY: helm crd-ref-docs helm-docs kubectl
helm crd-ref-docs helm-docs kubectl:
	./hack/envtest-assets.sh $@

## crds: regenerate deepcopy and the CRD YAML in crds/
crds: controller-gen
	$(BIN)/controller-gen object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(BIN)/controller-gen crd paths=./api/... output:crd:dir=./crds

## chart-crds: copy crds/*.yaml and the Gateway API experimental CRDs (bin/crds, from
## `make envtest-assets`) into the Helm chart, and every CRD (both Gateway API
## channels, the Akash ones) into the shardgate-crds chart; commit the copies
.PHONY: chart-crds
CHART_DIR := charts/shardgate
CRDS_CHART_DIR := charts/shardgate-crds
chart-crds:
	@test -d $(BIN)/crds/gateway-api/experimental || { echo "$(BIN)/crds/gateway-api/experimental is missing: run make envtest-assets" >&2; exit 1; }
	mkdir -p $(CHART_DIR)/crds $(CHART_DIR)/charts/gateway-api-crds/crds
	rm -f $(CHART_DIR)/crds/*.yaml $(CHART_DIR)/charts/gateway-api-crds/crds/*.yaml
	cp crds/*.yaml $(CHART_DIR)/crds/
	# CRDs only: not kustomization.yaml, nor the safe-upgrades admission policy,
	# which refuses experimental CRDs over standard ones.
	cp $(BIN)/crds/gateway-api/experimental/gateway.networking.*_*.yaml $(CHART_DIR)/charts/gateway-api-crds/crds/
	rm -f $(CHART_DIR)/charts/gateway-api-crds/crds/gateway.networking.k8s.io_vap_safeupgrades.yaml
	# The shardgate-crds chart: every CRD as a file its templates render: ours
	# in the chart, Akash's and the Gateway API ones of both channels (again
	# without the admission policy) in its subcharts.
	@test -d $(BIN)/crds/gateway-api/standard || { echo "$(BIN)/crds/gateway-api/standard is missing: run make envtest-assets" >&2; exit 1; }
	for d in files/shardgate charts/akash-crds/files charts/gateway-api-crds/files/standard charts/gateway-api-crds/files/experimental; do \
		mkdir -p $(CRDS_CHART_DIR)/$$d && rm -f $(CRDS_CHART_DIR)/$$d/*.yaml; done
	cp crds/*.yaml $(CRDS_CHART_DIR)/files/shardgate/
	cp crds/akash/*.yaml $(CRDS_CHART_DIR)/charts/akash-crds/files/
	for c in standard experimental; do \
		cp $(BIN)/crds/gateway-api/$$c/gateway.networking.*_*.yaml $(CRDS_CHART_DIR)/charts/gateway-api-crds/files/$$c/; \
		rm -f $(CRDS_CHART_DIR)/charts/gateway-api-crds/files/$$c/gateway.networking.k8s.io_vap_safeupgrades.yaml; done

## api-docs: regenerate docs/api-reference.md from api/v1alpha1 (crd-ref-docs)
.PHONY: api-docs
api-docs: crd-ref-docs
	$(BIN)/crd-ref-docs --source-path=api/v1alpha1 --config=hack/crd-ref-docs.yaml \
		--renderer=markdown --output-path=docs/api-reference.md --log-level=WARN

## verify-generated: fail when crds/, the deepcopy or docs/api-reference.md are stale (the tree is left as it was)
verify-generated: controller-gen crd-ref-docs
	./hack/verify-generated.sh

## lint: gofmt and go vet
lint: fmt vet
fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null; git ls-files --others --exclude-standard '*.go' 2>/dev/null)); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
vet:
	$(GO) vet ./...

## test: everything: assets, generated files, lint, unit and integration tests
test: envtest-assets verify-generated lint
	CI=$${CI:-} $(GO) test -count=1 -timeout 30m $(GOTESTFLAGS) ./...

## test-stress: the integration packages STRESS_RUNS times (default 3) under a CPU burner; every run must pass
.PHONY: test-stress
test-stress: envtest-assets
	./hack/stress.sh

## test-long: every fuzz target for FUZZTIME each (default 10m; not part of make test,
## whose plain `go test` runs the committed seed corpora only)
.PHONY: test-long
FUZZTIME ?= 10m
FUZZ_TARGETS := FuzzNormalise:./internal/hostnames FuzzEngine:./internal/hostnames \
	FuzzTranslate:./internal/gatewayapi FuzzXDSTranslate:./xds/translate
test-long:
	@set -e; for t in $(FUZZ_TARGETS); do \
		name=$${t%%:*}; pkg=$${t#*:}; \
		echo "== $$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

.PHONY: conformance conformance-local
CONFORMANCE_FLAGS ?=

## conformance: the upstream Gateway API conformance suite against the cluster in KUBECONFIG=... (report in conformance/reports/; see conformance/README.md)
conformance:
	@test -n "$(KUBECONFIG)" || { echo "make conformance needs KUBECONFIG=<path to a cluster with shardgate installed>; the local run is make conformance-local"; exit 1; }
	KUBECONFIG=$(KUBECONFIG) $(GO) test -count=1 -timeout 90m -ldflags '$(LDFLAGS)' -run '^TestConformance$$' -v ./conformance/ -args -cluster $(CONFORMANCE_FLAGS)

## conformance-local: the suite's status-only tests against the harness's cluster mode and an in-process shardgate (no traffic;
## also part of make test). Writes the upstream-format report to conformance/reports/v1.6.3-shardgate-local-report.yaml: commit it
conformance-local: override CONFORMANCE_FLAGS += -local-report=reports/$(GATEWAY_API_VERSION)-shardgate-local-report.yaml
conformance-local: envtest-assets
	CI=$${CI:-} $(GO) test -count=1 -timeout 25m -ldflags '$(LDFLAGS)' -run '^(TestConformanceLocal|TestTrafficTestsUpToDate|TestScan.*)$$' -v ./conformance/ $(if $(CONFORMANCE_FLAGS),-args $(CONFORMANCE_FLAGS))

## bench: Go benchmarks, then the bench command against the harness apiserver: every figure with
## its target and PASS/MISS, exit 0 either way (BENCHMARKS.md), and Contour on the same workload
## (-peer contour: ratios shardgate/Contour, target ≤ 1.00); BENCH_FLAGS go to the command,
## for example BENCH_FLAGS='-phases flood' or '-memory-routes 0'
bench: envtest-assets contour
	$(GO) test -run '^$$' -bench . -benchmem -cpu 1 ./internal/hostnames/
	$(GO) test -run '^$$' -bench . -benchmem ./internal/gatewayapi/ ./xds/translate/ ./xds/build/ ./xds/server/
	$(GO) run ./hack/bench -peer contour -peer-dir $(CONTOUR_DIR) $(BENCH_FLAGS)

## contour: the bench's peer, Contour $(CONTOUR_VERSION) (hack/versions.env), into bin/contour/: the binary
## built from the Go module proxy the way shardgate is built (static, -trimpath, this Go toolchain) and
## its CRDs (examples/contour/01-crds.yaml of the module). Cached: rebuilt only when the version changes.
## Not part of make test nor envtest-assets.
CONTOUR_DIR := $(BIN)/contour
.PHONY: contour
contour: $(CONTOUR_DIR)/.version-$(CONTOUR_VERSION)
$(CONTOUR_DIR)/.version-$(CONTOUR_VERSION):
	rm -rf $(CONTOUR_DIR).tmp && mkdir -p $(CONTOUR_DIR).tmp
	GOBIN=$(CONTOUR_DIR).tmp GOFLAGS='$(GOFLAGS) -mod=mod' $(GO) install \
		-ldflags '-X github.com/projectcontour/contour/internal/build.Version=$(CONTOUR_VERSION)' \
		github.com/projectcontour/contour/cmd/contour@$(CONTOUR_VERSION)
	dir=$$(GOFLAGS='$(GOFLAGS) -mod=mod' $(GO) mod download -json github.com/projectcontour/contour@$(CONTOUR_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
		test -n "$$dir" && install -m 0644 "$$dir/examples/contour/01-crds.yaml" $(CONTOUR_DIR).tmp/01-crds.yaml
	touch $(CONTOUR_DIR).tmp/.version-$(CONTOUR_VERSION)
	rm -rf $(CONTOUR_DIR) && mv $(CONTOUR_DIR).tmp $(CONTOUR_DIR)

## demo: boot the embedded control plane, run shardgate, apply examples/, stay up until Ctrl-C
demo: envtest-assets build
	$(GO) run ./hack/demo --binary $(BIN)/shardgate --examples examples

clean:
	rm -rf $(BIN)/shardgate $(BIN)/build
