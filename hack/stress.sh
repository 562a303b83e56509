#!/usr/bin/env bash
# make test-stress: runs the integration packages STRESS_RUNS times (default
# 3) while a CPU burner keeps every core busy, and fails unless every run
# passes. The burner is this script's own child: one busy loop per core at
# the tests' own priority, each bounded by `timeout`, and killed when the
# script ends however it ends.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
runs=${STRESS_RUNS:-3}
pkgs=(${STRESS_PKGS:-./controllers/... ./internal/... ./xds/... ./conformance/... ./cmd/... ./charts/...})
cores=$(nproc)
# The burner's hard bound: long enough for every run, short enough that a
# script killed by SIGKILL does not leave it spinning for long.
burn_for=${STRESS_BURN_MAX:-$((runs * 50))m}
logs="$root/bin/stress"
mkdir -p "$logs"

log() { printf '[test-stress %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

burners=()
stop_burners() {
  for p in "${burners[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${burners[@]}"; do wait "$p" 2>/dev/null || true; done
  burners=()
}
trap stop_burners EXIT
trap 'stop_burners; exit 130' INT TERM

log "compiling the test binaries first, so that the runs measure the tests"
go test -count=1 -run '^$' "${pkgs[@]}" >/dev/null

for _ in $(seq "$cores"); do
  timeout "$burn_for" bash -c 'while :; do :; done' &
  burners+=($!)
done
log "CPU burner: ${#burners[@]} busy loops (one per core), bounded at $burn_for"

passed=0 failed=0
for run in $(seq "$runs"); do
  out="$logs/run-$run.log"
  start=$(date +%s)
  log "run $run of $runs: go test -count=1 ${pkgs[*]} (log: $out; load $(cut -d' ' -f1-3 /proc/loadavg))"
  if CI=${CI:-true} go test -count=1 -timeout 30m "${pkgs[@]}" >"$out" 2>&1; then
    passed=$((passed + 1))
    log "run $run: PASS in $(( $(date +%s) - start ))s (load $(cut -d' ' -f1-3 /proc/loadavg))"
  else
    failed=$((failed + 1))
    log "run $run: FAIL in $(( $(date +%s) - start ))s (load $(cut -d' ' -f1-3 /proc/loadavg)); failures:"
    grep -E -e '^(--- FAIL|FAIL|\[FAIL\]|panic:)' -e '\[FAILED\]' "$out" | head -40 || true
  fi
done
stop_burners
log "stress: $runs runs under a CPU burner"
echo "stress: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
