#!/usr/bin/env bash
# Nsight Compute profile of chapter 9's TF32 mma.sync kernels against FP16's, cuBLAS TF32 (A @ B and
# B^T given) and mma.sync's own ceiling (benchmarks/mma_peak.cu), on the lent GPU machine, 1-4 minutes
# a part: where the TF32 kernels lose against the ceiling (stall reasons, tensor-pipe use) and at
# what SM clock each ran (--clock-control none: the clock the kernel's own power draw allows).
# Installs the carried wheels (.whl) as tools/device_gpu_tests.sh does. Results in $OUT:
#   ncu_tensor_cores_h100.txt   per kernel: pipe use, issue-active, stall reasons per issued instruction,
#                               shared-memory wavefronts and bank conflicts, instructions, SM clock
#   ncu_mma_peak_h100.txt       the same for mma_peak_tf32 (registers only: the ceiling's clock)
#   ncu_source_v6w_h100.csv     v6w's warp-stall samples per SASS instruction (--page source): where
#                               the warps wait, e.g. at the test of the next k-tile's mbarrier
#   ncu_streamk_h100.txt        stream-K v6w (the tail's shares last tile first, and in order) beside the
#                               persistent one: time, DRAM bytes read, L2 hit rate, tensor-pipe use
#   ncu_shared_memory_h100.txt  how busy the SM's shared-memory banks are (reads: ldmatrix; writes: the
#                               TMA's tiles) in the persistent v6w, v6t, FP16's v6s and cuBLAS TF32
#   ncu_source_streamk_h100.csv stream-K's and the persistent v6w's stall samples per SASS instruction
#   ncu_producer_h100.txt       the v6w kernels with a producer warpgroup (C stored from the fragments, or
#                               staged through shared memory; slots released early; the last MMAs first; clusters of 2 sharing B^T's tile) beside the persistent
#                               v6w, 4 launches each: time, cycles, tensor-pipe use, stall reasons, L2 hit rate, L2 reads
#                               and throughput, DRAM bytes, store instructions
#   ncu_feed_h100.txt           benchmarks/tensor_cores_tf32_feed.py's variants of the persistent kernels with
#                               and without a producer warpgroup (parts of their work switched off), one
#                               launch each: cycles and tensor-pipe use
#   ncu_mma_operands_h100.txt   benchmarks/mma_operands.py's warps of nothing but MMAs, 2 per scheduler, with a
#                               GEMM warp's fragments (a4b8) and with mma_peak's one pair (same8)
#   bash tools/device_tensor_cores_ncu.sh [PART ...]   (from the repository root, .whl beside it)
#   ncu_l2_h100.txt             L2 throughput, L2 read sectors and hit rate of the best TF32 mma.sync kernel (C staged),
#                               cuBLAS TF32 on B^T and the v6w whose clusters of 2 share B^T's tile, 2 launches each
#   ncu_source_staged_h100.csv  the staged kernel's stall samples per SASS instruction: how often the consumers'
#                               first try_wait on a k-tile fails (the data late), how often the producer waits
# PART: stalls peak source streamk smem streamk_source producer feed operands l2 staged_source (default: all)
set -uo pipefail
PARTS=" ${*:-stalls peak source streamk smem streamk_source producer feed operands l2 staged_source} "
part() { [[ "$PARTS" == *" $1 "* ]]; }
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
if part stalls; then
  timeout 300 ncu --clock-control none --kernel-name regex:"tc_v6|xmma|gemm|cutlass|sm90" --launch-skip 0 --launch-count 14 \
    --metrics "$M" --section ComputeWorkloadAnalysis \
    python3 benchmarks/ncu_tensor_cores.py $KERNELS --launches 2 > "$OUT/ncu_tensor_cores_h100.txt" 2>&1
  echo "ncu exit $?"
fi
if part peak; then
  timeout 120 ncu --clock-control none --kernel-name mma_peak_tf32 --launch-skip 3 --launch-count 1 --metrics "$M" \
    --section ComputeWorkloadAnalysis python3 benchmarks/mma_peak.py --out /tmp/mma_peak.json > "$OUT/ncu_mma_peak_h100.txt" 2>&1
  echo "ncu (mma_peak) exit $?"
fi
if part source; then
  timeout 150 ncu --clock-control none --section WarpStateStats --section SourceCounters --page source --print-source sass --csv \
    --kernel-name regex:"tc_v6w_tf32_256x128_s4" --launch-count 2 \
    python3 benchmarks/ncu_tensor_cores.py tc_v6w_tf32_256x128_s4 tc_v6w_tf32_256x128_s4_last --launches 1 \
    > "$OUT/ncu_source_v6w_h100.csv" 2>&1
  echo "ncu (source) exit $?"
fi
# stream-K against the persistent kernel it extends: DRAM bytes and L2 hit rate (does the tail's
# order of k-tiles decide what the tail reads from DRAM?), time and tensor-pipe use
if part streamk; then
  timeout 150 ncu --clock-control none --kernel-name regex:"tc_v6w" --launch-skip 0 --launch-count 6 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed \
    python3 benchmarks/ncu_tensor_cores.py tc_v6w_tf32_128x256_s4_persistent tc_v6w_tf32_128x256_s4_streamk \
    tc_v6w_tf32_128x256_s4_streamk_in_order --launches 2 > "$OUT/ncu_streamk_h100.txt" 2>&1
  echo "ncu (stream-K) exit $?"
fi
# shared memory: bank reads (ldmatrix) and writes (the TMA's tiles, cp.async's) against their peak
SM="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
SM="$SM,l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed"
SM="$SM,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed"
if part smem; then
  timeout 200 ncu --clock-control none --kernel-name regex:"tc_v6|xmma|gemm|cutlass|sm90" --launch-skip 0 --launch-count 8 \
    --metrics "$SM" python3 benchmarks/ncu_tensor_cores.py tc_v6w_tf32_128x256_s4_persistent tc_v6t_tf32_128x256x32_w64x64_s3_b1_bt \
    tc_v6s_f16_128x256x32_w64x64_s4_b1_epi cublas:tf32:bt --launches 2 > "$OUT/ncu_shared_memory_h100.txt" 2>&1
  echo "ncu (shared memory) exit $?"
fi
if part streamk_source; then
  timeout 200 ncu --clock-control none --section WarpStateStats --section SourceCounters --page source \
    --print-source sass --csv --kernel-name regex:"tc_v6w_tf32_128x256_s4_(persistent|streamk)" --launch-count 2 \
    python3 benchmarks/ncu_tensor_cores.py tc_v6w_tf32_128x256_s4_persistent tc_v6w_tf32_128x256_s4_streamk --launches 1 \
    > "$OUT/ncu_source_streamk_h100.csv" 2>&1
  echo "ncu (stream-K source) exit $?"
fi
PM="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
PM="$PM,smsp__issue_active.avg.pct_of_peak_sustained_active,lts__t_sector_hit_rate.pct,dram__bytes_read.sum"
PM="$PM,sm__cycles_elapsed.max,smsp__inst_executed_op_global_st.sum,lts__t_sectors_op_read.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed"
for s in long_scoreboard math_pipe_throttle wait branch_resolving not_selected short_scoreboard lg_throttle; do
  PM="$PM,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio"
done
if part producer; then
  timeout 240 ncu --clock-control none --kernel-name regex:"tc_v6w|sm90" --launch-count 44 --metrics "$PM" \
    python3 benchmarks/ncu_tensor_cores.py tc_v6w_tf32_128x256_s4_persistent tc_v6w_tf32_128x256_s4_producer_persistent \
    tc_v6w_tf32_256x128_s4_producer_persistent tc_v6w_tf32_128x256_s4_group4_producer_persistent \
    tc_v6w_tf32_128x256_s4_producer_persistent_staged tc_v6w_tf32_256x128_s4_producer_persistent_staged \
    tc_v6w_tf32_128x256_s4_cluster2_producer_persistent_staged tc_v6w_tf32_128x256_s4_producer_persistent_staged_early \
    tc_v6w_tf32_256x128_s4_producer_persistent_staged_early tc_v6w_tf32_128x256_s4_producer_persistent_staged_early_mmafirst \
    tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst --launches 4 \
    > "$OUT/ncu_producer_h100.txt" 2>&1
  echo "ncu (producer) exit $?"
fi
FM="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max"
FM="$FM,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active"
if part feed; then
  timeout 280 ncu --clock-control none --kernel-name regex:"(feed|thread0)_" --launch-count 26 --metrics "$FM" \
    python3 benchmarks/tensor_cores_tf32_feed.py --rounds 1 --warmup 0 --repeats 1 --batch-ms 0 > "$OUT/ncu_feed_h100.txt" 2>&1
  echo "ncu (feed) exit $?"
fi
if part operands; then
  OM="$FM,sm__cycles_active.avg,smsp__inst_executed.sum"
  for s in not_selected barrier short_scoreboard long_scoreboard mio_throttle math_pipe_throttle dispatch_stall wait lg_throttle \
           branch_resolving no_instruction; do
    OM="$OM,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio"
  done
  NAMES=a4b8,same8 ROUNDS=1 REPS=1 timeout 120 ncu --clock-control none --metrics "$OM" python3 benchmarks/mma_operands.py \
    > "$OUT/ncu_mma_operands_h100.txt" 2>&1
  echo "ncu (operands) exit $?"
fi
if part l2; then
  LM="gpu__time_duration.sum,sm__cycles_elapsed.max,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum.per_second"
  LM="$LM,lts__t_sectors_op_read.sum,lts__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed"
  timeout 150 ncu --clock-control none --kernel-name regex:"tc_v6w|sm90" --launch-count 6 --metrics "$LM" \
    python3 benchmarks/ncu_tensor_cores.py tc_v6w_tf32_256x128_s4_producer_persistent_staged cublas:tf32:bt \
    tc_v6w_tf32_128x256_s4_cluster2 --launches 2 > "$OUT/ncu_l2_h100.txt" 2>&1
  echo "ncu (l2) exit $?"
fi
if part staged_source; then
  timeout 150 ncu --clock-control none --section WarpStateStats --section SourceCounters --page source --print-source sass --csv \
    --kernel-name regex:"tc_v6w" --launch-count 1 \
    python3 benchmarks/ncu_tensor_cores.py tc_v6w_tf32_256x128_s4_producer_persistent_staged --launches 1 \
    > "$OUT/ncu_source_staged_h100.csv" 2>&1
  echo "ncu (staged source) exit $?"
fi
grep -hE "^  [a-z_0-9]+.*\(|per_second|pipeline|issue_active|duration" "$OUT"/ncu_*_h100.txt | head -80
