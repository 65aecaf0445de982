#!/usr/bin/env bash
# Per-layer cost table: install, build, generate GPT-2 small (124M
# parameters), annotate its costs for one 8xH100 node and print the
# per-layer cost table.
#
#   scripts/costs.sh [MODEL-ARGS...] (default: gpt --preset gpt2-small)
#   TARGET=v100-pcie-4x scripts/costs.sh vgg16
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >&2
BIN=${BUILD_DIR:-build}/bin
TARGET=${TARGET:-h100-sxm-8x}
if (($# == 0)); then set -- gpt --preset gpt2-small; fi

MODEL=$(mktemp --suffix=.mlir)
trap 'rm -f "$MODEL"' EXIT
"$BIN/strata-model" "$@" -o "$MODEL"
head -n 1 "$MODEL"
"$BIN/strata-opt" "$MODEL" --strata-annotate-costs="target=$TARGET" \
  --test-strata-print-costs -o /dev/null
