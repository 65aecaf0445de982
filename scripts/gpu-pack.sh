#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh needs on a bare GPU machine (nvcc, CMake,
# ninja, PyTorch; none of this machine's Debian packages) into one folder:
#
#   scripts/gpu-pack.sh [BUILD] [DIR]      (defaults: build, gpu)
#
#   DIR/bin    strata-run, StrataCudaTests, strata-nccl-check and
#              strata-cuda-gemm-bench from BUILD (a whole-tree build with the
#              CUDA backend), and DIR/lib the non-CUDA shared libraries they
#              load that such a machine lacks (Open MPI's, which are loaded
#              but never initialised in a single-process run);
#   DIR/plans  the plans, compiled here (the GPU machine has no MLIR): MLP,
#              small GPT and ResNet-18 under SGD, Adam and AdamW, a bf16
#              small GPT, a fused and buffer-planned small GPT, gpt2-small (fused,
#              planned) in FP32 and bf16;
#   DIR/deps   a header-only nlohmann_json (with its CMake package) and the
#              googletest sources, for building the runtime there on its own.
#
# The folder is ignored by git; name it in the device tool's `carry`.
set -euo pipefail
BUILD=$(realpath "${1:-build}")
DIR=${2:-gpu}
B=$BUILD/bin
for tool in strata-run strata-nccl-check strata-cuda-gemm-bench strata-model \
  strata-opt strata-translate; do
  [[ -x $B/$tool ]] || { echo "gpu-pack: $B/$tool missing (build with the CUDA backend)" >&2; exit 1; }
done
[[ -x $BUILD/test/Unit/StrataCudaTests ]] || { echo "gpu-pack: StrataCudaTests missing" >&2; exit 1; }

# Only an earlier pack (or a new folder) is replaced.
if [[ -e $DIR && ! -d $DIR/plans && -n $(ls -A "$DIR" 2>/dev/null) ]]; then
  echo "gpu-pack: $DIR exists and is not a pack; not replacing it" >&2
  exit 1
fi
rm -rf "$DIR"
mkdir -p "$DIR"/{bin,lib,plans,deps}
cp "$B"/{strata-run,strata-nccl-check,strata-cuda-gemm-bench} "$BUILD/test/Unit/StrataCudaTests" "$DIR/bin/"
# Shared libraries outside glibc, libstdc++ and CUDA (the GPU machine has
# those; CUDA's come from its toolkit or PyTorch's wheels).
ldd "$DIR"/bin/* | awk '/=> \// {print $1, $3}' | sort -u |
  { grep -Ev '^(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|ld-linux)[.-]|^lib(cudart|cublas|cublasLt|nccl)[.]' || true; } |
  while read -r name path; do cp -L "$path" "$DIR/lib/$name"; done

P=$DIR/plans
model() { "$B/strata-model" "$@"; }
compile() { # OUT AUTODIFF-OPTIONS [EXTRA strata-opt flags...]
  local out=$1 opts=$2
  shift 2
  # strata-opt's remarks go to a log, shown when it fails.
  if ! "$B/strata-opt" --strata-autodiff="$opts" "$@" 2>"$out.log" |
    "$B/strata-translate" --export-plan -o "$out"; then
    echo "gpu-pack: compiling $out failed:" >&2
    head -20 "$out.log" >&2
    exit 1
  fi
  rm -f "$out.log"
}
for opt in sgd adam adamw; do
  case $opt in
  sgd) mlp="optimizer=sgd lr=0.05 momentum=0.9" other="optimizer=sgd lr=0.01 momentum=0.9" ;;
  adam) mlp="optimizer=adam lr=0.003" other=$mlp ;;
  adamw) mlp="optimizer=adamw lr=0.01" other="optimizer=adamw lr=0.003" ;;
  esac
  model mlp --batch 64 --inputs 64 --hidden 128 --layers 3 --classes 10 | compile "$P/mlp-$opt.json" "$mlp"
  model gpt --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 96 --batch 8 | compile "$P/gpt-$opt.json" "$other"
done
model resnet18 --batch 2 --image-size 32 --classes 10 |
  compile "$P/cnn-sgd.json" "optimizer=sgd lr=0.01 momentum=0.9"
model gpt --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 96 --batch 8 |
  compile "$P/gpt-bf16.json" "optimizer=adamw lr=0.003" --strata-mixed-precision
# Adam on ResNet-18 at batch 2 and lr 0.003 is chaotic (the loss reaches
# 117 at step 2; bench/gpu.md): Adam and AdamW at batch 8 and lr 1e-4.
for opt in adam adamw; do
  model resnet18 --batch 8 --image-size 32 --classes 10 |
    compile "$P/cnn8-$opt.json" "optimizer=$opt lr=0.0001"
done
# Fused and buffer-planned (the default flow, --strata-train-pipeline's).
model gpt --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 96 --batch 8 |
  compile "$P/gpt-fused.json" "optimizer=adamw lr=0.003" --strata-fuse --strata-plan-buffers
gpt2="optimizer=adamw lr=0.0003 weight-decay=0.01"
model gpt --preset gpt2-small --batch 8 --seq 1024 |
  compile "$P/gpt2s.json" "$gpt2" --strata-fuse --strata-plan-buffers
model gpt --preset gpt2-small --batch 8 --seq 1024 |
  compile "$P/gpt2s-bf16.json" "$gpt2" --strata-mixed-precision --strata-fuse --strata-plan-buffers

# Standalone-build dependencies.
mkdir -p "$DIR/deps/json/include" "$DIR/deps/json/share/cmake"
cp -r /usr/include/nlohmann "$DIR/deps/json/include/"
cp -r /usr/share/cmake/nlohmann_json "$DIR/deps/json/share/cmake/"
cp -r /usr/src/googletest "$DIR/deps/googletest"
du -sh "$DIR"
