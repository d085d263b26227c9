#!/usr/bin/env bash
# Which instruction spends the joules? Chapter 9's TF32 wgmma kernel (v7 with B^T given: 128 x 256 tiles through
# cp.async, wgmma reading both operands from shared memory) beside the best mma.sync kernels (the same k-tiles through
# the TMA, ldmatrix into registers, then mma.sync; alone and in clusters of 2), warps of nothing but mma.sync and
# cuBLAS on B^T, at the board's power limit in rounds as tools/device_tensor_cores_power_rounds.sh runs them: each
# back to back for 3 s, the list 6 times, every other time reversed. Nsight Compute first counts what each moves
# (clocks unlocked): L2 reads, DRAM bytes, cycles. About 4 minutes on the lent GPU machine.
#   ncu_instructions_h100.txt                  Nsight Compute: DRAM bytes, L2 reads, cycles, 4 launches each
#   tensor_cores_power_instructions_h100.json  every run: TFLOP/s, clock, power, temperatures, active limiters
#   bash tools/device_tensor_cores_power_instructions.sh     (from the repository root, .whl beside it)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
START=$SECONDS
source tools/device_env.sh || exit 1
export PYTHONPATH=$PYTHONPATH:$PWD CUPY_TF32=0 PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,temperature.gpu --format=csv,noheader
WGMMA=tc_v7_wgmma_tf32_bt
BEST=tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst
PAIR=tc_v6w_tf32_256x128_s4_cluster2_producer_persistent_staged_early_mmafirst
PM="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,dram__bytes_read.sum"
PM="$PM,lts__t_sectors_op_read.sum,lts__t_sector_hit_rate.pct"
timeout 240 ncu --clock-control none --kernel-name regex:"tc_v|xmma" --launch-count 16 --metrics "$PM" \
    python3 benchmarks/ncu_tensor_cores.py $WGMMA $BEST $PAIR cublas:tf32:bt --launches 4 > "$OUT/ncu_instructions_h100.txt" 2>&1
echo "ncu rc=$? after $((SECONDS - START)) s"
KERNELS="cublas:tf32:bt $WGMMA $PAIR $BEST mma:a4b8_rand"
timeout 330 python3 benchmarks/tensor_cores_power.py $KERNELS --seconds 3 --rounds 6 \
    --out "$OUT/tensor_cores_power_instructions_h100.json"
echo "rounds rc=$? after $((SECONDS - START)) s"
