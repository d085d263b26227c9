#!/usr/bin/env bash
# Nsight Compute stall profile of chapter 9's TF32 mma.sync kernels against FP16's and cuBLAS TF32,
# on the lent GPU machine, in about 2 minutes: the measurement the TF32 goal needs next (v6 and v6t
# lose a third of mma.sync's own ceiling, benchmarks/results/mma_peak_h100.json; where?).
# Installs the carried wheels (.whl) as tools/device_gpu_tests.sh does. Results in $OUT:
#   ncu_tensor_cores_h100.txt   per kernel: pipe use, issue-active, stall reasons per issued instruction,
#                               shared-memory wavefronts and bank conflicts, instructions
#   bash tools/device_tensor_cores_ncu.sh      (from the repository root, .whl beside it)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source tools/device_env.sh || exit 1
export PYTHONPATH=$PYTHONPATH:$PWD CUPY_TF32=0 PATH=$PATH:/usr/local/cuda/bin
M="sm__throughput.avg.pct_of_peak_sustained_elapsed"
M="$M,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,gpu__time_duration.sum"
M="$M,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
for s in not_selected barrier short_scoreboard long_scoreboard mio_throttle math_pipe_throttle dispatch_stall wait lg_throttle; do
  M="$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio"
done
KERNELS="tc_v6s_tf32_128x256x32_w64x64_s3_b1 tc_v6t_tf32_128x256x32_w64x64_s3_b1_bt tc_v6s_f16_128x256x32_w64x64_s4_b1_epi cublas:tf32 cublas:fp16"
timeout 400 ncu --kernel-name regex:"tc_v6|xmma|gemm|cutlass|sm90" --launch-skip 0 --launch-count 10 --metrics "$M" \
  --section ComputeWorkloadAnalysis \
  python3 benchmarks/ncu_tensor_cores.py $KERNELS --launches 2 > "$OUT/ncu_tensor_cores_h100.txt" 2>&1
echo "ncu exit $?"
grep -E "^  [a-z_0-9]+.*\(|stalled|issue_active|Pipe|bank|wavefronts|duration" "$OUT/ncu_tensor_cores_h100.txt" | head -120
