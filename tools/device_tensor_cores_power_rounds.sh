#!/usr/bin/env bash
# The best TF32 kernels against cuBLAS at the board's power limit, in rounds, on the lent GPU machine, in about
# 4 minutes. Each kernel runs back to back for 3 s (benchmarks/tensor_cores_power.py), the list 6 times, every
# other time reversed, so that each run of a kernel has a run of cuBLAS on B^T beside it at about the same
# temperature; nvidia-smi samples the SM clock, the power, both temperatures and the reasons the driver gives for
# holding the clock down (power cap, thermal slowdown, ...). Warps of nothing but MMAs run in the rounds too:
# what holds their clock below the maximum when the power does not. The best kernels run with and without the snake
# order too (MmaTf32Tma's SNAKE: odd rounds of the persistent walk read K from the end, so that a round starts on what
# the round before read last, still in L2): do fewer bytes from DRAM buy a higher clock?
#   tensor_cores_snake_gpu_tests.log      the snake kernels' GPU tests (against float64) and the spill check
#   ncu_snake_h100.txt                    Nsight Compute, clocks unlocked: DRAM bytes, L2 reads, cycles, tensor pipe
#   tensor_cores_power_rounds_h100.json   every run: TFLOP/s, clock, power, temperatures, active limiters
#   power_performance_h100.txt            nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER after the rounds
#   bash tools/device_tensor_cores_power_rounds.sh     (from the repository root, .whl beside it)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
START=$SECONDS
source tools/device_env.sh || exit 1
export PYTHONPATH=$PYTHONPATH:$PWD CUPY_TF32=0 PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,temperature.gpu --format=csv,noheader
BEST=tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst
PAIR=tc_v6w_tf32_256x128_s4_cluster2_producer_persistent_staged_early_mmafirst
PYTHONPATH=/tmp/site timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider -p no:randomly -o addopts="" \
    tests/test_tensor_cores_gpu.py -k "snake or no_spills" > "$OUT/tensor_cores_snake_gpu_tests.log" 2>&1
echo "gpu tests rc=$? after $((SECONDS - START)) s"; tail -2 "$OUT/tensor_cores_snake_gpu_tests.log"
PM="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,dram__bytes_read.sum"
PM="$PM,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_op_read.sum,lts__t_sector_hit_rate.pct"
timeout 200 ncu --clock-control none --kernel-name regex:"tc_v6w" --launch-count 16 --metrics "$PM" \
    python3 benchmarks/ncu_tensor_cores.py $BEST ${BEST}_snake $PAIR ${PAIR}_snake --launches 4 > "$OUT/ncu_snake_h100.txt" 2>&1
echo "ncu rc=$? after $((SECONDS - START)) s"
KERNELS="cublas:tf32:bt $PAIR ${PAIR}_snake $BEST ${BEST}_snake mma:a4b8_rand"
timeout 300 python3 benchmarks/tensor_cores_power.py $KERNELS --seconds 3 --rounds 6 \
    --out "$OUT/tensor_cores_power_rounds_h100.json"
echo "rounds rc=$? after $((SECONDS - START)) s"
nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER > "$OUT/power_performance_h100.txt" 2>&1
