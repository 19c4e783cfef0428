#!/usr/bin/env bash
# CI regression gate: run every case of cases.txt and compare it with its committed baseline using
# `accel-sim check` (exit 1 with a diff table when a metric moves by more than 2 %).
# Regenerate the baselines after an intended model change with:  tests/golden/regression/run.sh --regenerate
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
bin="$root/.venv/bin/accel-sim"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
status=0
while read -r name arch workload; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  "$bin" run "$root/$arch" "$root/$workload" --json -o "$out/$name" > /dev/null
  if [[ "${1:-}" == "--regenerate" ]]; then
    mkdir -p "$here/$name"
    cp "$out/$name/summary.json" "$out/$name/per_einsum.csv" "$here/$name/"
    echo "regenerated $name"
  else
    "$bin" check "$out/$name" --baseline "$here/$name" --rtol 0.02 || status=1
  fi
done < "$here/cases.txt"
exit $status
