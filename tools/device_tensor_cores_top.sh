#!/usr/bin/env bash
# Chapter 9's top versions on the lent GPU machine, in under 5 minutes: only the new wgmma rows
# (v7 TF32 with B^T's fragments in registers, v7 TF32 with B^T given and with the transpose
# kernel timed, v8 wgmma + TMA in FP16 / BF16) beside the rows they are compared with (cuBLAS in
# each precision, v7 FP16 / BF16 with cp.async, the best v6 TF32 of the last run), then their GPU
# tests. The new versions run in child processes with timeouts (kernels/tensor_cores.py:
# isolate): a fault, trap or hang in one is reported in its row and the rest still runs.
# Installs the carried wheels (.whl) as tools/device_gpu_tests.sh does. Results in $OUT:
#   tensor_cores_top_h100.json / .txt   the benchmark (the .txt ends with the best v6 and wgmma rows)
#   tensor_cores_top_bench.log          its log
#   tensor_cores_top_gpu_tests.log/.xml the GPU tests of these versions against float64
#   tensor_cores_top_ptx_gpu.log        tc_transpose_f32: the PTX engine against the GPU, bit for bit
#   bash tools/device_tensor_cores_top.sh      (from the repository root, .whl beside it)
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
START=$SECONDS
source tools/device_env.sh || exit 1
export PYTHONPATH=$PYTHONPATH:$PWD
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
# 1. benchmark: stops starting new rows after 170 s, killed at 210 s
timeout 210 python3 benchmarks/tensor_cores_bench.py --budget 170 --no-numba --no-torch \
    --only tc_v7 tc_v8 tc_v6s_tf32_128x256x32_w64x64_s3_b1 --out "$OUT/tensor_cores_top_h100.json" \
    > "$OUT/tensor_cores_top_bench.log" 2>&1
echo "benchmark rc=$? after $((SECONDS - START)) s"
tail -25 "$OUT/tensor_cores_top_h100.txt" 2>/dev/null || tail -40 "$OUT/tensor_cores_top_bench.log"
# 2. GPU tests of these versions (the new ones each in a child process), killed at 100 s
PYTHONPATH=/tmp/site timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider -p no:randomly -o addopts="" \
    tests/test_tensor_cores_gpu.py -k "tc_v7 or tc_v8 or cublas or no_spills" \
    --junitxml="$OUT/tensor_cores_top_gpu_tests.xml" > "$OUT/tensor_cores_top_gpu_tests.log" 2>&1
echo "gpu tests rc=$? after $((SECONDS - START)) s"
tail -15 "$OUT/tensor_cores_top_gpu_tests.log"
# 3. the transpose kernel on the PTX engine against the GPU, killed at 40 s
PYTHONPATH=/tmp/site timeout 40 python3 -m pytest -m gpu -q -p no:cacheprovider -p no:randomly -o addopts="" \
    tests/test_ptx_engine_gpu.py -k "tc_transpose" > "$OUT/tensor_cores_top_ptx_gpu.log" 2>&1
echo "ptx gpu test rc=$? after $((SECONDS - START)) s"
tail -5 "$OUT/tensor_cores_top_ptx_gpu.log"
