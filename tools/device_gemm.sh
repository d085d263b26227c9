#!/usr/bin/env bash
# Chapter 6 on the lent GPU machine: the GEMM GPU tests, the benchmark (with --tune) and
# Nsight Compute on the best numba and CUDA C versions and on cuBLAS. Results go to $OUT
# (h100_timings.json with topics.gemm: copy it to simtlab/data/).
#   bash tools/device_gemm.sh          (from the repository root, .whl beside it)
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
timeout 240 bash tools/device_gpu_tests.sh -k gemm > "$OUT/gemm_gpu_tests_run.txt" 2>&1
tail -3 "$OUT/gemm_gpu_tests_run.txt"
cp "$OUT/gpu_tests.log" "$OUT/gemm_gpu_tests.log" 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD
cp simtlab/data/h100_timings.json "$OUT/h100_timings.json"
timeout 330 python3 benchmarks/gpu_gemm.py --tune --out "$OUT/h100_timings.json" > "$OUT/gpu_gemm.log" 2>&1
tail -45 "$OUT/gpu_gemm.log"
{
  for target in "v7 warp tiling|numba" "v7 warp tiling|cuda-c" "v5 2-D blocking|numba" "cublas|cuda-c"; do
    version=${target%|*}; impl=${target#*|}
    echo "==== ncu: $version ($impl) ===="
    timeout 60 ncu --kernel-name regex:'gemm|sgemm|xmma' --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      python3 benchmarks/ncu_gemm.py "$version" "$impl" 2>&1 | grep -v "^==PROF==" | tail -80
  done
} > "$OUT/gemm_ncu.txt" 2>&1
grep -E "====|Duration|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Stall" "$OUT/gemm_ncu.txt" | head -60
