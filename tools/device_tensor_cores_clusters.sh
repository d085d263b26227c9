#!/usr/bin/env bash
# Clusters of 2 with a producer warpgroup, on the lent GPU machine, in about 4 minutes: do fewer bytes from L2
# buy time? Two blocks of a cluster share the larger tile of A or B^T by TMA multicast (kernels/tensor_cores.cu,
# MmaTf32Tma's SHARE_A), so each k-tile brings a third fewer bytes from L2; the blocks then wait for each other's
# consumers before a slot is refilled: after their MMAs (remote arrives), or early, relayed by the producers
# (MmaTf32Tma's RELAY). Measured against the same kernels without clusters (C staged, slots released early, the
# last MMAs first; 256 x 128 is the best kernel), three ways:
#   ncu_clusters_h100.txt                        Nsight Compute, clocks unlocked, 4 launches each: cycles,
#                                                tensor-pipe use, L2 read sectors, DRAM bytes, SM clock
#   tensor_cores_power_clusters_h100.json        each kernel back to back for 3 s, the board at its 700 W:
#   tensor_cores_power_clusters_reversed_h100.json  TFLOP/s and the SM clock the power limit leaves (twice,
#                                                in opposite orders, so neither side always runs later)
#   tensor_cores_head_to_head_clusters_h100.json the kernels and cuBLAS on B^T in turns, 20 rounds
#   tensor_cores_clusters_gpu_tests.log          the GPU tests of every v6w (against float64) and of spills
#   bash tools/device_tensor_cores_clusters.sh     (from the repository root, .whl beside it)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
START=$SECONDS
source tools/device_env.sh || exit 1
export PYTHONPATH=$PYTHONPATH:$PWD CUPY_TF32=0 PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader
ALONE="tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst tc_v6w_tf32_128x256_s4_producer_persistent_staged_early_mmafirst"
PAIRS="tc_v6w_tf32_256x128_s4_cluster2_producer_persistent_staged_mmafirst tc_v6w_tf32_128x256_s4_cluster2_producer_persistent_staged_mmafirst"
PAIRS="$PAIRS tc_v6w_tf32_256x128_s4_cluster2_producer_persistent_staged_early_mmafirst"
PAIRS="$PAIRS tc_v6w_tf32_128x256_s4_cluster2_producer_persistent_staged_early_mmafirst"
PYTHONPATH=/tmp/site timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider -p no:randomly -o addopts="" \
    tests/test_tensor_cores_gpu.py -k "tc_v6w or no_spills" > "$OUT/tensor_cores_clusters_gpu_tests.log" 2>&1
echo "gpu tests rc=$? after $((SECONDS - START)) s"; tail -2 "$OUT/tensor_cores_clusters_gpu_tests.log"
PM="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,dram__bytes_read.sum"
PM="$PM,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_op_read.sum"
timeout 200 ncu --clock-control none --kernel-name regex:"tc_v6w" --launch-count 40 --metrics "$PM" \
    python3 benchmarks/ncu_tensor_cores.py $ALONE $PAIRS --launches 4 > "$OUT/ncu_clusters_h100.txt" 2>&1
echo "ncu rc=$? after $((SECONDS - START)) s"
timeout 100 python3 benchmarks/tensor_cores_power.py cublas:tf32:bt $ALONE $PAIRS --seconds 3 \
    --out "$OUT/tensor_cores_power_clusters_h100.json" | tail -6
timeout 100 python3 benchmarks/tensor_cores_power.py $(echo cublas:tf32:bt $ALONE $PAIRS | tr ' ' '\n' | tac) --seconds 3 \
    --out "$OUT/tensor_cores_power_clusters_reversed_h100.json" | tail -6
echo "power rc=$? after $((SECONDS - START)) s"
timeout 120 python3 benchmarks/tensor_cores_head_to_head.py cublas:tf32:bt $ALONE $PAIRS --rounds 20 \
    --out "$OUT/tensor_cores_head_to_head_clusters_h100.json" | tail -6
echo "head to head rc=$? after $((SECONDS - START)) s"
