#!/usr/bin/env bash
# The TF32 mma.sync sweep on the lent GPU machine, in about 5 minutes: only the v6t and v6w
# configurations of kernels/tensor_cores.cu (TF32 with B^T in shared memory, every fragment by
# ldmatrix; v6w fed by the TMA with mbarriers; the B^T-given ones also with tc_transpose_f32
# timed) beside the rows they are measured against (cuBLAS in each precision, cuBLAS TF32 on B^T,
# the best v6 TF32 of the last full run), then their GPU tests (every v6t and v6w against
# float64; truncation or rounding of the TF32 inputs, cuBLAS's included; no spills). Installs the carried wheels (.whl) as tools/device_gpu_tests.sh does. Results in $OUT:
#   tensor_cores_tf32_h100.json / .txt  the benchmark (the .txt ends with the best v6 TF32 row)
#   tensor_cores_tf32_bench.log         its log
#   tensor_cores_tf32_gpu_tests.log/.xml the GPU tests of these versions
#   tensor_cores_power_h100.json        SM clock and board power while the best of them and cuBLAS
#   tensor_cores_power_short_h100.json  run back to back for 3 s and for 1 s (benchmarks/tensor_cores_power.py)
#   tensor_cores_head_to_head_h100.json the best kernels and cuBLAS on B^T timed in turns, 20 rounds
#                                       (benchmarks/tensor_cores_head_to_head.py)
#   bash tools/device_tensor_cores_tf32.sh     (from the repository root, .whl beside it)
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
START=$SECONDS
source tools/device_env.sh || exit 1
export PYTHONPATH=$PYTHONPATH:$PWD
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
# 1. benchmark: stops starting new rows after 200 s, killed at 260 s
timeout 260 python3 benchmarks/tensor_cores_bench.py --budget 200 --no-numba --no-torch \
    --only tc_v6t tc_v6w tc_v6s_tf32_128x256x32_w64x64_s3_b1 --out "$OUT/tensor_cores_tf32_h100.json" \
    > "$OUT/tensor_cores_tf32_bench.log" 2>&1
echo "benchmark rc=$? after $((SECONDS - START)) s"
tail -20 "$OUT/tensor_cores_tf32_h100.txt" 2>/dev/null || tail -40 "$OUT/tensor_cores_tf32_bench.log"
# 2. GPU tests of these versions, killed at 180 s
PYTHONPATH=/tmp/site timeout 180 python3 -m pytest -m gpu -q -p no:cacheprovider -p no:randomly -o addopts="" \
    tests/test_tensor_cores_gpu.py -k "tc_v6t or tc_v6w or cublas or no_spills" \
    --junitxml="$OUT/tensor_cores_tf32_gpu_tests.xml" > "$OUT/tensor_cores_tf32_gpu_tests.log" 2>&1
echo "gpu tests rc=$? after $((SECONDS - START)) s"
tail -15 "$OUT/tensor_cores_tf32_gpu_tests.log"
# 3. clock and power under sustained load (about a minute)
timeout 150 python3 benchmarks/tensor_cores_power.py cublas:tf32:bt tc_v6w_tf32_256x128_s4 tc_v6w_tf32_256x128_s4_last \
    tc_v6w_tf32_128x256_s4_persistent tc_v6w_tf32_256x128_s4_producer_persistent \
    tc_v6w_tf32_256x128_s4_producer_persistent_staged tc_v6w_tf32_256x128_s4_producer_persistent_staged_early \
    tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst \
    tc_v6t_tf32_128x256x32_w64x64_s3_b1_bt cublas:tf32 \
    tc_v6s_f16_128x256x32_w64x64_s4_b1_epi cublas:fp16 --seconds 3 --out "$OUT/tensor_cores_power_h100.json"
# the same for 1 s each: the board below its power limit, the clocks higher
timeout 100 python3 benchmarks/tensor_cores_power.py cublas:tf32:bt tc_v6w_tf32_256x128_s4 tc_v6w_tf32_256x128_s4_last \
    tc_v6w_tf32_128x256_s4_persistent tc_v6w_tf32_256x128_s4_producer_persistent \
    tc_v6w_tf32_256x128_s4_producer_persistent_staged tc_v6w_tf32_256x128_s4_producer_persistent_staged_early \
    tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst \
    tc_v6t_tf32_128x256x32_w64x64_s3_b1_bt cublas:tf32 \
    tc_v6s_f16_128x256x32_w64x64_s4_b1_epi cublas:fp16 --seconds 1 --out "$OUT/tensor_cores_power_short_h100.json"
echo "power rc=$? after $((SECONDS - START)) s"
# 4. the best kernels and cuBLAS on B^T in turns, 20 rounds (under a minute): the drift falls on all alike
timeout 150 python3 benchmarks/tensor_cores_head_to_head.py cublas:tf32:bt tc_v6w_tf32_256x128_s4_producer_persistent \
    tc_v6w_tf32_256x128_s4_producer_persistent_staged tc_v6w_tf32_256x128_s4_producer_persistent_staged_early \
    tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst \
    tc_v6w_tf32_128x256_s4_producer_persistent_staged_early_mmafirst --rounds 20 \
    --out "$OUT/tensor_cores_head_to_head_h100.json" | tail -7
echo "head to head rc=$? after $((SECONDS - START)) s"
