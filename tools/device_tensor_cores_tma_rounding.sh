#!/usr/bin/env bash
# Does the TMA round? Chapter 9's best TF32 mma.sync kernels with tensor maps that say TF32 (the _rn kernels: the TMA
# rounds A and B^T to nearest TF32 on their way into shared memory) beside the same kernels with FP32 maps (the MMAs
# truncate) and cuBLAS TF32: what each GEMM reads (C = A @ I), how close it comes to float64, and, at the board's power
# limit in rounds, what it costs (benchmarks/tensor_cores_tma_rounding.py); Nsight Compute first counts the pair's
# instructions, bytes and cycles with either map. About 5 minutes on the lent GPU machine.
#   ncu_tma_rounding_h100.txt           Nsight Compute: instructions, DRAM bytes, L2 reads, cycles, 4 launches each
#   tensor_cores_tma_rounding_h100.json rounding, accuracy and every power run (TFLOP/s, clock, power, temperatures)
#   bash tools/device_tensor_cores_tma_rounding.sh     (from the repository root, .whl beside it)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
START=$SECONDS
source tools/device_env.sh || exit 1
export PYTHONPATH=$PYTHONPATH:$PWD CUPY_TF32=0 PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,temperature.gpu --format=csv,noheader
PAIR=tc_v6w_tf32_256x128_s4_cluster2_producer_persistent_staged_early_mmafirst
PM="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,smsp__inst_executed.sum"
PM="$PM,dram__bytes_read.sum,lts__t_sectors_op_read.sum"
timeout 150 ncu --clock-control none --kernel-name regex:"tc_v" --launch-count 8 --metrics "$PM" \
    python3 benchmarks/ncu_tensor_cores.py $PAIR ${PAIR}_rn --launches 4 > "$OUT/ncu_tma_rounding_h100.txt" 2>&1
echo "ncu rc=$? after $((SECONDS - START)) s"
timeout 420 python3 benchmarks/tensor_cores_tma_rounding.py --rounds 6 --seconds 3 --out "$OUT/tensor_cores_tma_rounding_h100.json"
echo "rounding rc=$? after $((SECONDS - START)) s"
