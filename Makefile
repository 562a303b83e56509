# shardgate. `make test` and `make demo` do all the set-up on a fresh machine.
include hack/versions.env

SHELL      := /usr/bin/env bash
GO         ?= go
BIN        := $(CURDIR)/bin
VERSION    ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS    := -X github.com/shardgate/shardgate/internal/version.Version=$(VERSION)
GOTESTFLAGS ?=
export GOTOOLCHAIN := local

.PHONY: all build test bench unit-test demo envtest-assets controller-gen crds verify-generated lint fmt vet clean

all: build

## build: the shardgate binary into bin/shardgate
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/shardgate ./cmd/shardgate

## envtest-assets: kube-apiserver, etcd, controller-manager, scheduler, KWOK, MetalLB and CRDs into bin/
envtest-assets:
	./hack/envtest-assets.sh all

controller-gen:
	./hack/envtest-assets.sh controller-gen

## crds: regenerate deepcopy and the CRD YAML in crds/
crds: controller-gen
	$(BIN)/controller-gen object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(BIN)/controller-gen crd paths=./api/... output:crd:dir=./crds

## verify-generated: fail when crds/ or the deepcopy are stale (the tree is left as it was)
verify-generated: controller-gen
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

## bench: Go benchmarks (figures, not pass/fail)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -cpu 1 ./internal/hostnames/

## demo: boot the embedded control plane, run shardgate, apply examples/, stay up until Ctrl-C
demo: envtest-assets build
	$(GO) run ./hack/demo --binary $(BIN)/shardgate --examples examples

clean:
	rm -rf $(BIN)/shardgate $(BIN)/build
