#!/usr/bin/env bash
# Builds the real test control plane from the Go module proxy into bin/:
#   bin/k8s/{kube-apiserver,kube-controller-manager,kube-scheduler,etcd,kwok,metallb-controller}
#   bin/k8s/{pebble,cert-manager-controller}
#   bin/crds/{gateway-api/standard,gateway-api/experimental,metallb,cert-manager}
#   bin/kwok-stages/*.yaml
#   bin/controller-gen, bin/helm, bin/helm-docs, bin/crd-ref-docs, bin/k8s/kubectl
# Each binary records the version it was built from in bin/.versions/<name>;
# a binary whose recorded version matches is skipped, so the target is cheap
# to run again. Versions come from hack/versions.env only.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck disable=SC1091
source "$root/hack/versions.env"

bin="$root/bin"
k8s="$bin/k8s"
work="$bin/build"
stamps="$bin/.versions"
mkdir -p "$k8s" "$work" "$stamps" "$bin/crds"

export GOFLAGS=-mod=mod
export CGO_ENABLED=0
export GOTOOLCHAIN=local

log() { printf '[envtest-assets %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

current() { # name version -> 0 when the recorded version matches and the file exists
  local name=$1 version=$2 file=$3
  [[ -x "$file" || -f "$file" || -d "$file" ]] && [[ -f "$stamps/$name" ]] && [[ "$(cat "$stamps/$name")" == "$version" ]]
}
stamp() { printf '%s' "$2" >"$stamps/$1"; }

moddir() { # module@version -> its directory in the module cache
  go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}
modfile() { # module@version -> its go.mod in the module cache
  go mod download -json "$1" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p'
}

# wrapper NAME: a throwaway module under bin/build/NAME.
wrapper() {
  local dir="$work/$1"
  rm -rf "$dir" && mkdir -p "$dir"
  printf 'module shardgate.local/build/%s\n\ngo 1.26\n' "$1" >"$dir/go.mod"
  echo "$dir"
}

# tools DIR PKG...: a build-tagged file importing the main packages, so that
# `go mod tidy` keeps the pinned requirement and fills in go.sum.
tools() {
  local dir=$1; shift
  { printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for p in "$@"; do printf '\t_ "%s"\n' "$p"; done
    printf ')\n'; } >"$dir/tools.go"
  (cd "$dir" && go mod tidy)
}

# kubernetes_wrapper NAME VERSION PKG...: a throwaway module requiring
# k8s.io/kubernetes at VERSION. Every module k8s.io/kubernetes maps to
# ./staging/src/k8s.io/X is published as k8s.io/X at v0.<minor>.<patch>,
# so the replace list is generated from its own go.mod.
kubernetes_wrapper() {
  local name=$1 want=$2; shift 2
  local dir gomod minor
  dir=$(wrapper "$name")
  gomod=$(modfile "k8s.io/kubernetes@$want")
  minor=${want#v1.}; minor=v0.${minor}
  {
    printf 'require k8s.io/kubernetes %s\n\n' "$want"
    sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/.*#replace \1 => \1 '"$minor"'#p' "$gomod"
  } >>"$dir/go.mod"
  tools "$dir" "$@" >&2
  echo "$dir"
}

build_kubernetes() {
  local want="$KUBERNETES_VERSION"
  if current kube-apiserver "$want" "$k8s/kube-apiserver" &&
     current kube-controller-manager "$want" "$k8s/kube-controller-manager" &&
     current kube-scheduler "$want" "$k8s/kube-scheduler"; then
    log "kubernetes $want: up to date"; return
  fi
  log "kubernetes $want: building kube-apiserver, kube-controller-manager, kube-scheduler (about 6 minutes cold on 2 cores)"
  local dir
  dir=$(kubernetes_wrapper kubernetes "$want" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler)
  (cd "$dir" && go build -trimpath -o "$k8s/" \
      k8s.io/kubernetes/cmd/kube-apiserver \
      k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler)
  for b in kube-apiserver kube-controller-manager kube-scheduler; do stamp "$b" "$want"; done
  log "kubernetes $want: done"
}

# kubectl, at the cluster's version, from the same wrapper as the control
# plane (so it shares its build cache), with the version stamps the
# Kubernetes release build sets: `kubectl version --client` prints the real
# version, not v0.0.0-master.
build_kubectl() {
  local want="$KUBERNETES_VERSION"
  if current kubectl "$want" "$k8s/kubectl"; then log "kubectl $want: up to date"; return; fi
  log "kubectl $want: building k8s.io/kubernetes/cmd/kubectl"
  local dir major minor ldflags="-s -w" pkg
  dir=$(kubernetes_wrapper kubectl "$want" k8s.io/kubernetes/cmd/kubectl)
  major=${want#v}; major=${major%%.*}
  minor=${want#v*.}; minor=${minor%%.*}
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ldflags+=" -X $pkg.gitVersion=$want -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
    ldflags+=" -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  (cd "$dir" && go build -trimpath -ldflags "$ldflags" -o "$k8s/kubectl" k8s.io/kubernetes/cmd/kubectl)
  stamp kubectl "$want"
  log "kubectl $want: done"
}

build_simple() { # stamp-name version module package output [ldflags]
  local name=$1 want=$2 module=$3 pkg=$4 out=$5 ldflags=${6:-}
  if current "$name" "$want" "$out"; then log "$name $want: up to date"; return; fi
  log "$name $want: building $pkg"
  local dir
  dir=$(wrapper "$name")
  printf 'require %s %s\n' "$module" "$want" >>"$dir/go.mod"
  tools "$dir" "$pkg"
  (cd "$dir" && go build -trimpath ${ldflags:+-ldflags "$ldflags"} -o "$out" "$pkg")
  stamp "$name" "$want"
  log "$name $want: done"
}

# helm, with the version stamps of Helm's own release build: its version,
# and the Kubernetes version of its client-go as the default capabilities
# (without them `helm template` assumes Kubernetes 1.20).
build_helm() {
  local want="$HELM_VERSION" module=helm.sh/helm/v3
  if current helm "$want" "$bin/helm"; then log "helm $want: up to date"; return; fi
  local gomod cg major minor
  gomod=$(modfile "$module@$want")
  cg=$(sed -n 's#^[[:space:]]*k8s\.io/client-go v0\.\([0-9]*\)\..*#\1#p' "$gomod" | head -1)
  [[ -n "$cg" ]] || { echo "helm $want: no k8s.io/client-go requirement in $gomod" >&2; exit 1; }
  major=1 minor=$cg
  build_simple helm "$want" "$module" "$module/cmd/helm" "$bin/helm" \
    "-s -w -X $module/internal/version.version=$want -X $module/internal/version.gitTreeState=clean $(
    ) -X $module/pkg/lint/rules.k8sVersionMajor=$major -X $module/pkg/lint/rules.k8sVersionMinor=$minor $(
    ) -X $module/pkg/chartutil.k8sVersionMajor=$major -X $module/pkg/chartutil.k8sVersionMinor=$minor"
}

stage_crds() {
  local want="gateway-api=$GATEWAY_API_VERSION metallb=$METALLB_VERSION kwok=$KWOK_VERSION fast"
  if current crds "$want" "$bin/crds/metallb"; then log "crds: up to date"; return; fi
  log "crds: staging Gateway API $GATEWAY_API_VERSION, MetalLB $METALLB_VERSION, KWOK stages $KWOK_VERSION"
  local gw mlb kwok
  gw=$(moddir "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION")
  mlb=$(moddir "go.universe.tf/metallb@$METALLB_VERSION")
  kwok=$(moddir "sigs.k8s.io/kwok@$KWOK_VERSION")
  rm -rf "$bin/crds/gateway-api" "$bin/crds/metallb" "$bin/kwok-stages"
  mkdir -p "$bin/crds/gateway-api/standard" "$bin/crds/gateway-api/experimental" "$bin/crds/metallb" "$bin/kwok-stages"
  cp "$gw"/config/crd/standard/*.yaml "$bin/crds/gateway-api/standard/"
  cp "$gw"/config/crd/experimental/*.yaml "$bin/crds/gateway-api/experimental/"
  cp "$mlb"/config/crd/bases/*.yaml "$bin/crds/metallb/"
  # The "fast" stages: Pods become Ready without delays or jitter.
  for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
           pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
    [[ -f "$kwok/kustomize/stage/$f.yaml" ]] || { echo "kwok stage $f not found in $kwok" >&2; exit 1; }
    cp "$kwok/kustomize/stage/$f.yaml" "$bin/kwok-stages/$(basename "$f").yaml"
  done
  chmod -R u+w "$bin/crds" "$bin/kwok-stages"
  stamp crds "$want"
}

# cert-manager's CRDs, from the main module, staged apart from the others
# (own version stamp) so that a cert-manager bump restages only these.
stage_cert_manager_crds() {
  local want="$CERT_MANAGER_VERSION" out="$bin/crds/cert-manager"
  if current crds-cert-manager "$want" "$out"; then log "cert-manager crds $want: up to date"; return; fi
  log "cert-manager crds $want: staging"
  local cm
  cm=$(moddir "github.com/cert-manager/cert-manager@$want")
  [[ -n "$cm" && -d "$cm/deploy/crds" ]] || { echo "cert-manager $want: no deploy/crds in the module" >&2; exit 1; }
  rm -rf "$out" && mkdir -p "$out"
  cp "$cm"/deploy/crds/*.yaml "$out/"
  chmod -R u+w "$out"
  stamp crds-cert-manager "$want"
}

# cert-manager's controller. Its main package (cmd/controller upstream) is
# the module github.com/cert-manager/cert-manager/controller-binary, which
# the module proxy does not serve; hack/certmanager/controller-binary is a
# copy of it at CERT_MANAGER_VERSION whose go.mod requires the main module
# from the proxy instead of replacing it with ../../. Being named under
# github.com/cert-manager/cert-manager, it may import the main module's
# internal packages. The stamp includes a digest of the copy's Go files,
# go.mod and go.sum, so editing them rebuilds.
build_cert_manager() {
  local src="$root/hack/certmanager/controller-binary" out="$k8s/cert-manager-controller"
  local want digest
  grep -q "^[[:space:]]*github.com/cert-manager/cert-manager $CERT_MANAGER_VERSION\$" "$src/go.mod" || {
    echo "$src/go.mod does not require github.com/cert-manager/cert-manager $CERT_MANAGER_VERSION (hack/versions.env): copy cmd/controller of that tag" >&2
    exit 1
  }
  digest=$(cd "$src" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)
  want="$CERT_MANAGER_VERSION+$digest"
  if current cert-manager-controller "$want" "$out"; then log "cert-manager-controller $want: up to date"; return; fi
  log "cert-manager-controller $want: building from $src"
  local dir="$work/cert-manager-controller"
  rm -rf "$dir" && mkdir -p "$dir" && cp -R "$src/." "$dir/"
  # The module proxy this project's machines use refuses one dependency of
  # cert-manager's, github.com/Venafi/vcert/v5 (its go.mod is served, its
  # code is not). hack/certmanager/goproxy holds that module's zip as a
  # file proxy, tried first; go.sum pins its hash, as upstream's does.
  (cd "$dir" && GOPROXY="file://$root/hack/certmanager/goproxy,$(go env GOPROXY)" go build -trimpath \
      -ldflags "-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$CERT_MANAGER_VERSION" \
      -o "$out" .)
  stamp cert-manager-controller "$want"
  log "cert-manager-controller $want: done"
}

what=${1:-all}
case "$what" in
  controller-gen)
    build_simple controller-gen "$CONTROLLER_TOOLS_VERSION" sigs.k8s.io/controller-tools sigs.k8s.io/controller-tools/cmd/controller-gen "$bin/controller-gen" ;;
  helm) build_helm ;;
  crd-ref-docs)
    build_simple crd-ref-docs "$CRD_REF_DOCS_VERSION" github.com/elastic/crd-ref-docs github.com/elastic/crd-ref-docs "$bin/crd-ref-docs" ;;
  kubectl) build_kubectl ;;
  pebble)
    build_simple pebble "$PEBBLE_VERSION" github.com/letsencrypt/pebble/v2 github.com/letsencrypt/pebble/v2/cmd/pebble "$k8s/pebble" "-s -w -X main.version=$PEBBLE_VERSION" ;;
  cert-manager) stage_cert_manager_crds; build_cert_manager ;;
  helm-docs)
    build_simple helm-docs "$HELM_DOCS_VERSION" github.com/norwoodj/helm-docs github.com/norwoodj/helm-docs/cmd/helm-docs "$bin/helm-docs" ;;
  all)
    start=$(date +%s)
    stage_crds
    build_simple etcd "$ETCD_VERSION" go.etcd.io/etcd/server/v3 go.etcd.io/etcd/server/v3 "$k8s/etcd"
    build_simple kwok "$KWOK_VERSION" sigs.k8s.io/kwok sigs.k8s.io/kwok/cmd/kwok "$k8s/kwok"
    build_simple metallb-controller "$METALLB_VERSION" go.universe.tf/metallb go.universe.tf/metallb/controller "$k8s/metallb-controller"
    stage_cert_manager_crds
    build_simple pebble "$PEBBLE_VERSION" github.com/letsencrypt/pebble/v2 github.com/letsencrypt/pebble/v2/cmd/pebble "$k8s/pebble" "-s -w -X main.version=$PEBBLE_VERSION"
    build_cert_manager
    build_kubernetes
    build_kubectl
    build_helm
    build_simple crd-ref-docs "$CRD_REF_DOCS_VERSION" github.com/elastic/crd-ref-docs github.com/elastic/crd-ref-docs "$bin/crd-ref-docs"
    build_simple helm-docs "$HELM_DOCS_VERSION" github.com/norwoodj/helm-docs github.com/norwoodj/helm-docs/cmd/helm-docs "$bin/helm-docs"
    log "all assets ready in $(( $(date +%s) - start ))s: $k8s"
    ;;
  *) echo "usage: $0 [all|controller-gen|helm|crd-ref-docs|kubectl|helm-docs|pebble|cert-manager]" >&2; exit 2 ;;
esac
