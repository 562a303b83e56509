#!/usr/bin/env bash
# Fails when the generated deepcopy, CRD YAML or API reference
# (docs/api-reference.md) is stale. It regenerates in
# place and restores the committed files either way, so the tree is unchanged.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r crds "$tmp/crds"
cp api/v1alpha1/zz_generated.deepcopy.go "$tmp/"
restore() {
  rm -rf crds && cp -r "$tmp/crds" crds
  cp "$tmp/zz_generated.deepcopy.go" api/v1alpha1/zz_generated.deepcopy.go
}
make -s crds >/dev/null
if ! diff -r "$tmp/crds" crds >"$tmp/diff" || ! diff "$tmp/zz_generated.deepcopy.go" api/v1alpha1/zz_generated.deepcopy.go >>"$tmp/diff"; then
  restore
  echo "generated files are stale: run 'make crds' and commit the result" >&2
  head -50 "$tmp/diff" >&2
  exit 1
fi
# The API reference, generated into a scratch file (the tree is not touched).
"$root/bin/crd-ref-docs" --source-path=api/v1alpha1 --config=hack/crd-ref-docs.yaml \
  --renderer=markdown --output-path="$tmp/api-reference.md" --log-level=WARN
if ! diff docs/api-reference.md "$tmp/api-reference.md" >"$tmp/diff"; then
  echo "docs/api-reference.md is stale: run 'make api-docs' and commit the result" >&2
  head -50 "$tmp/diff" >&2
  exit 1
fi
echo "generated files are up to date"
