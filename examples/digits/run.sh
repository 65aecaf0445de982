#!/usr/bin/env bash
# Trains an MLP and a small CNN on scikit-learn's digits (no download: the
# data ships with Debian's python3-sklearn, which scripts/setup.sh installs)
# and evaluates them on the held-out 20%.
#
#   examples/digits/run.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
OUT=${2:-$BUILD/digits}
BIN=$BUILD/bin
mkdir -p "$OUT"
/usr/bin/python3 examples/digits/convert.py "$OUT/flat" --layout flat
/usr/bin/python3 examples/digits/convert.py "$OUT/nchw" --layout nchw

echo "== MLP: 64 -> 128 -> 10, AdamW, 900 steps of 32"
"$BIN/strata-model" mlp --batch 32 --inputs 64 --hidden 128 --layers 2 --classes 10 \
  | "$BIN/strata-opt" --strata-autodiff="optimizer=adamw lr=0.003" \
  | "$BIN/strata-translate" --export-plan -o "$OUT/mlp.plan.json"
"$BIN/strata-run" "$OUT/mlp.plan.json" --steps 900 --seed 1 --log-every 300 \
  --data "$OUT/flat/digits-train.safetensors" \
  --eval-data "$OUT/flat/digits-test.safetensors" --eval-every 300 \
  --save "$OUT/mlp.safetensors"

echo "== inference: the MLP's forward-only plan with the trained weights"
"$BIN/strata-model" mlp --batch 32 --inputs 64 --hidden 128 --layers 2 --classes 10 \
  | "$BIN/strata-translate" --export-plan --forward-only -o "$OUT/mlp.infer.json"
"$BIN/strata-run" "$OUT/mlp.infer.json" --infer --init "$OUT/mlp.safetensors" \
  --data "$OUT/flat/digits-test.safetensors"

echo "== CNN (cnn-small): two 3x3 convolutions with pooling, AdamW, 900 steps of 32"
"$BIN/strata-model" cnn-small --batch 32 --image-size 8 --channels 1 --classes 10 \
  | "$BIN/strata-opt" --strata-autodiff="optimizer=adamw lr=0.003" \
  | "$BIN/strata-translate" --export-plan -o "$OUT/cnn.plan.json"
"$BIN/strata-run" "$OUT/cnn.plan.json" --steps 900 --seed 1 --log-every 300 \
  --data "$OUT/nchw/digits-train.safetensors" \
  --eval-data "$OUT/nchw/digits-test.safetensors" --eval-every 300
