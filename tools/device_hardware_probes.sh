#!/usr/bin/env bash
# Run on the lent GPU machine (from the repository root, .whl carried): the hardware probes'
# (tools/device_hardware_probes.py), one Nsight Compute profile of the course kernels it names, the GPU
# bandwidth benchmark of chapters 3-5, then the GPU tests given as arguments. Everything to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source tools/device_env.sh || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
timeout 150 python3 tools/device_hardware_probes.py --out "$OUT" 2>&1 | tee "$OUT/hardware_probes.log"
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sector_hit_rate.pct,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_sector_hit_rate.pct,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size
NCU="ncu --profile-from-start off --target-processes all"
timeout 130 $NCU --set detailed --metrics "$METRICS" -o "$OUT/profile" python3 tools/device_hardware_probes.py --profile > "$OUT/ncu_run.log" 2>&1 \
  || timeout 120 $NCU --metrics "$METRICS" -f -o "$OUT/profile" python3 tools/device_hardware_probes.py --profile >> "$OUT/ncu_run.log" 2>&1
tail -5 "$OUT/ncu_run.log"
ncu --import "$OUT/profile.ncu-rep" --page raw --csv --metrics "$METRICS" > "$OUT/ncu_metrics.csv" 2>&1
ncu --import "$OUT/profile.ncu-rep" --page details -k regex:transpose > "$OUT/ncu_transpose.txt" 2>&1
rm -f "$OUT/profile.ncu-rep"
cp simtlab/data/h100_timings.json "$OUT/h100_timings.json"
timeout 150 python3 benchmarks/gpu_bandwidth.py --out "$OUT/h100_timings.json" 2>&1 | tee "$OUT/gpu_bandwidth.log" | grep -v "^  \[" | tail -60
if [ $# -gt 0 ]; then
  timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" "$@" 2>&1 | tee "$OUT/gpu_tests.log" | tail -15
fi
cat "$OUT/ncu_run.log" >> "$OUT/hardware_probes.log"
