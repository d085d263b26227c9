#!/usr/bin/env bash
# Chapter 6's split-K on the lent GPU machine, in about 2 minutes. Installs the carried wheels
# like tools/device_gpu_tests.sh, then (each part with its own timeout):
#   1. benchmarks/gpu_gemm.py --split-k: cuBLAS, v7 (no split) and split-K x1..x16 at
#      512x512x16384 and 1024x1024x16384, checked, then timed   -> gemm_splitk.json / .log
#   2. the GPU tests of split-K (the plan through CuPy, and the PTX engine's cases against the GPU)
#                                                                -> splitk_gpu_tests.log
# Results under $OUT.   bash tools/device_gemm_splitk.sh     (from the repository root)
set -uo pipefail
OUT=${OUT:-/tmp/out}; export OUT; mkdir -p "$OUT"
source tools/device_env.sh || exit 1
export PYTHONPATH=$PYTHONPATH:$PWD
export CUPY_TF32=0
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"

echo "== 1. split-K sweep (limit 240 s) =="
timeout 240 python3 benchmarks/gpu_gemm.py --split-k --split-k-out "$OUT/gemm_splitk.json" > "$OUT/gemm_splitk.log" 2>&1
echo "exit $?"; tail -20 "$OUT/gemm_splitk.log"

echo "== 2. GPU tests (limit 150 s) =="
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" \
  tests/test_gemm_splitk_gpu.py tests/test_ptx_engine_gpu.py -k "splitk or split_k" \
  > "$OUT/splitk_gpu_tests.log" 2>&1
echo "exit $?"; tail -8 "$OUT/splitk_gpu_tests.log"

cat <<'NOTE'
== storing the results (on the development machine, after fetching $OUT) ==
  cp OUT/gemm_splitk.json       benchmarks/results/gemm_splitk_h100.json
  cp OUT/gemm_splitk.log        benchmarks/results/gemm_splitk_h100.log
  cp OUT/splitk_gpu_tests.log   benchmarks/results/gemm_splitk_gpu_tests_h100.log
  python tools/store_gemm_optim.py      # copies it into simtlab/data/h100_timings.json for chapter 6
NOTE
ls -la "$OUT"
