#!/usr/bin/env bash
# The main job: install and build, compile a small byte-level GPT into a
# training plan, and train it on the CPU on real text, printing the loss and
# the throughput of every step.
#
#   scripts/main.sh                    # a 4-layer GPT on the GNU GPL 3 text, 500 steps
#   STEPS=1000 DATA=some.txt scripts/main.sh
#   MODEL="gpt --preset gpt-tiny --layers 2" scripts/main.sh
#
# Also writes build/main/: the model (.mlir), the training step, the plan
# (.plan.json), a Chrome trace of the last steps and the trained checkpoint.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >&2
BIN=${BUILD_DIR:-build}/bin
OUT=${BUILD_DIR:-build}/main
mkdir -p "$OUT"

MODEL=${MODEL:-gpt --preset gpt-tiny --hidden 128 --seq 64 --positions 64 --batch 32}
STEPS=${STEPS:-500}
DATA=${DATA:-/usr/share/common-licenses/GPL-3}
OPTIMIZER=${OPTIMIZER:-optimizer=adamw lr=0.003}
if [ ! -f "$DATA" ]; then
  DATA=README.md
fi

echo "== compile: strata-model $MODEL | strata-opt --strata-autodiff=\"$OPTIMIZER\" --strata-plan-buffers | strata-translate --export-plan"
# shellcheck disable=SC2086
"$BIN/strata-model" $MODEL -o "$OUT/model.mlir"
head -n 1 "$OUT/model.mlir"
"$BIN/strata-opt" "$OUT/model.mlir" --strata-autodiff="$OPTIMIZER" \
  --strata-plan-buffers -o "$OUT/step.mlir"
"$BIN/strata-translate" --export-plan "$OUT/step.mlir" -o "$OUT/model.plan.json"

echo "== train: strata-run $OUT/model.plan.json --data $DATA --steps $STEPS"
"$BIN/strata-run" "$OUT/model.plan.json" --data "$DATA" --steps "$STEPS" \
  --log-every "${LOG_EVERY:-10}" --save "$OUT/model.safetensors"
