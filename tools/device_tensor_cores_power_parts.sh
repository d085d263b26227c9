#!/usr/bin/env bash
# What each part of the best TF32 kernel costs at the board's power limit, on the lent GPU machine, in about
# 3 minutes. At 700 W the board sets the clock, so a kernel's rate there is set by the energy each GEMM takes,
# not only by its cycles. benchmarks/tensor_cores_tf32_feed.py compiles the best kernel (256 x 128, a producer,
# C staged, slots released early, the last MMAs first) again with parts switched off (no store; no tiles; no
# tiles and no ldmatrix; tiles only; the kernel on 4 whole waves) and runs each back to back for 3 s beside
# cuBLAS on B^T, the clock and the power sampled; warps of nothing but MMAs (benchmarks/mma_operands.py, a
# 64 x 64 warp's fragments, two warps a scheduler) the same way: what mma.sync alone reaches at 700 W.
#   tensor_cores_power_parts_h100.json   the variants at the power limit, twice in opposite orders
#   tensor_cores_power_mma_h100.json     MMAs alone (random mantissas and 10-bit ones), the kernel, cuBLAS,
#                                        twice in opposite orders
#   ncu_power_parts_h100.txt             Nsight Compute, clocks unlocked: each variant's cycles and tensor pipe
#   bash tools/device_tensor_cores_power_parts.sh     (from the repository root, .whl beside it)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
START=$SECONDS
source tools/device_env.sh || exit 1
export PYTHONPATH=$PYTHONPATH:$PWD CUPY_TF32=0 PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader
BEST=tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst
timeout 200 python3 benchmarks/tensor_cores_tf32_feed.py --designs best --power-seconds 3 \
    --out "$OUT/tensor_cores_power_parts_h100.json"
echo "parts rc=$? after $((SECONDS - START)) s"
timeout 100 python3 benchmarks/tensor_cores_power.py cublas:tf32:bt mma:a4b8_rand mma:a4b8 $BEST --seconds 3 \
    --out "$OUT/tensor_cores_power_mma_h100.json"
timeout 100 python3 benchmarks/tensor_cores_power.py $BEST mma:a4b8 mma:a4b8_rand cublas:tf32:bt --seconds 3 \
    --out "$OUT/tensor_cores_power_mma_reversed_h100.json"
echo "mma rc=$? after $((SECONDS - START)) s"
FM="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max"
FM="$FM,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
timeout 150 ncu --clock-control none --kernel-name regex:"best_" --launch-count 20 --metrics "$FM" \
    python3 benchmarks/tensor_cores_tf32_feed.py --designs best --rounds 1 --warmup 0 --repeats 1 --batch-ms 0 \
    > "$OUT/ncu_power_parts_h100.txt" 2>&1
echo "ncu rc=$? after $((SECONDS - START)) s"
