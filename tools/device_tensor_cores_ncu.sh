#!/usr/bin/env bash
# Nsight Compute profile of chapter 9's TF32 mma.sync kernels against FP16's, cuBLAS TF32 (A @ B and
# B^T given) and mma.sync's own ceiling (benchmarks/mma_peak.cu), on the lent GPU machine, in about
# 4 minutes: where the TF32 kernels lose against the ceiling (stall reasons, tensor-pipe use) and at
# what SM clock each ran (--clock-control none: the clock the kernel's own power draw allows).
# Installs the carried wheels (.whl) as tools/device_gpu_tests.sh does. Results in $OUT:
#   ncu_tensor_cores_h100.txt   per kernel: pipe use, issue-active, stall reasons per issued instruction,
#                               shared-memory wavefronts and bank conflicts, instructions, SM clock
#   ncu_mma_peak_h100.txt       the same for mma_peak_tf32 (registers only: the ceiling's clock)
#   ncu_source_v6w_h100.csv     v6w's warp-stall samples per SASS instruction (--page source): where
#                               the warps wait, e.g. at the test of the next k-tile's mbarrier
#   bash tools/device_tensor_cores_ncu.sh      (from the repository root, .whl beside it)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source tools/device_env.sh || exit 1
export PYTHONPATH=$PYTHONPATH:$PWD CUPY_TF32=0 PATH=$PATH:/usr/local/cuda/bin
M="sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second"
M="$M,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,gpu__time_duration.sum"
M="$M,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
for s in not_selected barrier short_scoreboard long_scoreboard mio_throttle math_pipe_throttle dispatch_stall wait lg_throttle; do
  M="$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio"
done
KERNELS="tc_v6t_tf32_128x256x32_w64x64_s3_b1_bt tc_v6w_tf32_128x256_s4 tc_v6w_tf32_256x128_s4 tc_v6w_tf32_256x128_s4_last tc_v6s_f16_128x256x32_w64x64_s4_b1_epi cublas:tf32 cublas:tf32:bt"
timeout 300 ncu --clock-control none --kernel-name regex:"tc_v6|xmma|gemm|cutlass|sm90" --launch-skip 0 --launch-count 14 \
  --metrics "$M" --section ComputeWorkloadAnalysis \
  python3 benchmarks/ncu_tensor_cores.py $KERNELS --launches 2 > "$OUT/ncu_tensor_cores_h100.txt" 2>&1
echo "ncu exit $?"
timeout 120 ncu --clock-control none --kernel-name mma_peak_tf32 --launch-skip 3 --launch-count 1 --metrics "$M" \
  --section ComputeWorkloadAnalysis python3 benchmarks/mma_peak.py --out /tmp/mma_peak.json > "$OUT/ncu_mma_peak_h100.txt" 2>&1
echo "ncu (mma_peak) exit $?"
timeout 150 ncu --clock-control none --section WarpStateStats --section SourceCounters --page source --print-source sass --csv \
  --kernel-name regex:"tc_v6w_tf32_256x128_s4" --launch-count 2 \
  python3 benchmarks/ncu_tensor_cores.py tc_v6w_tf32_256x128_s4 tc_v6w_tf32_256x128_s4_last --launches 1 \
  > "$OUT/ncu_source_v6w_h100.csv" 2>&1
echo "ncu (source) exit $?"
grep -hE "^  [a-z_0-9]+.*\(|per_second|pipeline|issue_active|duration" "$OUT"/ncu_*_h100.txt | head -80
