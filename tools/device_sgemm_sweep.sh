#!/usr/bin/env bash
# Chapter 6's top and chapter 8's fusion split, on the lent GPU machine, in about 5 minutes.
# Installs the carried wheels like tools/device_gpu_tests.sh, then (each part with its own
# timeout, so one that hangs or fails leaves the others' results):
#   1. benchmarks/gemm_v8_sweep.py: cuBLAS, v7 and every v8 configuration (checked, then timed
#      at 4096^3), numba v7 against its float4 variant       -> gemm_v8_sweep.json / .txt
#   2. benchmarks/sass_gemm.py: SASS of CUDA C and numba v1/v2 (and v7, v8, numba float4)
#                                                            -> sass_gemm.txt
#   3. chapter 8's conv1 three ways at batch 10,000 (gpubench.cnn.conv1_paths)
#                                                            -> cnn_conv1_paths.json
#   4. the GPU tests of v8, numba float4 and the PTX engine's new cases
#                                                            -> sgemm_gpu_tests.log
# Results under $OUT. Storing them: see the end of this script's output.
#   bash tools/device_sgemm_sweep.sh          (from the repository root, .whl beside it)
set -uo pipefail
OUT=${OUT:-/tmp/out}; export OUT; mkdir -p "$OUT"
source tools/device_env.sh || exit 1
export PYTHONPATH=$PYTHONPATH:$PWD
export CUPY_TF32=0
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"

echo "== 1. v8 sweep (limit 150 s) =="
timeout 150 python3 benchmarks/gemm_v8_sweep.py --out "$OUT" > "$OUT/gemm_v8_sweep.log" 2>&1
echo "exit $?"; tail -25 "$OUT/gemm_v8_sweep.log"

echo "== 2. SASS (limit 60 s) =="
timeout 60 python3 benchmarks/sass_gemm.py --out "$OUT" > "$OUT/sass_gemm.log" 2>&1
echo "exit $?"; grep -E "^====|^whole kernel|^main loop \(" "$OUT/sass_gemm.log" | head -40

echo "== 3. conv1 three ways, batch 10,000 (limit 60 s) =="
timeout 60 python3 - > "$OUT/cnn_conv1_paths.log" 2>&1 <<'PY'
import json, os
from simtlab.gpubench.cnn import conv1_paths
r = conv1_paths(10_000)
path = os.path.join(os.environ["OUT"], "cnn_conv1_paths.json")
open(path, "w").write(json.dumps(r, indent=1, default=str) + "\n")
print(json.dumps({k: r[k] for k in ("algorithm_gain_ms", "fusion_gain_ms", "pool1_equal_bits",
                                    "pool1_max_abs_diff_vs_fused")}, indent=1))
PY
echo "exit $?"; tail -12 "$OUT/cnn_conv1_paths.log"

echo "== 4. GPU tests (limit 100 s) =="
timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" \
  tests/test_gemm_v8_gpu.py tests/test_ptx_engine_gpu.py -k "gemm_v8 or float4 or relu_direct" \
  > "$OUT/sgemm_gpu_tests.log" 2>&1
echo "exit $?"
tail -15 "$OUT/sgemm_gpu_tests.log"

cat <<'NOTE'
== storing the results (on the development machine, after fetching $OUT) ==
  cp OUT/gemm_v8_sweep.json benchmarks/results/gemm_v8_sweep_h100.json
  cp OUT/gemm_v8_sweep.txt  benchmarks/results/gemm_v8_sweep_h100.txt
  cp OUT/sass_gemm.txt      benchmarks/results/sass_gemm_h100.txt
  cp OUT/cnn_conv1_paths.json benchmarks/results/cnn_conv1_paths_h100.json
  cp OUT/sgemm_gpu_tests.log benchmarks/results/sgemm_gpu_tests_h100.log
  then set kernels/gemm.py V8_CHAMPION to the line "set kernels/gemm.py: V8_CHAMPION = ..." above
NOTE
ls -la "$OUT"
