#!/usr/bin/env bash
# On the lent GPU machine: chapters 6-8's measurements (benchmarks/probe_ch6_8.py) and the
# Nsight Compute runs they cite. Installs the carried wheels like tools/device_gpu_tests.sh.
# Results under $OUT: probe_ch6_8.json, ncu_ch6_8.txt, sass_gemm_v1_v2.txt.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source tools/device_env.sh || exit 1
python3 benchmarks/probe_ch6_8.py --out "$OUT" "$@"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)
if [ -n "$NCU" ]; then
  SECTIONS="--metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats"
  {
    for v in "v5 tuned" "v6 image per block"; do
      echo "==== ncu: conv $v (cuda-c), C1, batch 1000 ===="
      $NCU --kernel-name regex:conv_v --launch-skip 2 --launch-count 1 $SECTIONS python3 benchmarks/ncu_conv.py "$v" 2>&1 | grep -v "^==PROF=="
    done
    echo "==== ncu: conv v5 tuned (cuda-c), C3, batch 1000 ===="
    $NCU --kernel-name regex:conv_v --launch-skip 2 --launch-count 1 $SECTIONS python3 benchmarks/ncu_conv.py "v5 tuned" --layer C3 2>&1 | grep -v "^==PROF=="
    echo "==== ncu: the course forward at batch 1, each kernel's GPU time (third pass) ===="
    $NCU --launch-skip 10 --metrics gpu__time_duration.sum,sm__cycles_active.avg python3 benchmarks/ncu_cnn.py --batch 1 2>&1 | grep -v "^==PROF=="
    echo "==== ncu: cuBLAS SGEMM 4096^3 ===="
    $NCU --kernel-name regex:"gemm|xmma|cutlass" --launch-skip 2 --launch-count 1 $SECTIONS python3 benchmarks/ncu_gemm.py cublas 2>&1 | grep -v "^==PROF=="
    echo "==== ncu: gemm v3 shared tiles (cuda-c) 4096^3 ===="
    $NCU --kernel-name regex:gemm_v3 --launch-skip 2 --launch-count 1 $SECTIONS --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis python3 benchmarks/ncu_gemm.py "v3 shared tiles" cuda-c 2>&1 | grep -v "^==PROF=="
  } > "$OUT/ncu_ch6_8.txt" 2>&1
else
  echo "no ncu on this machine" > "$OUT/ncu_ch6_8.txt"
fi
# numba's v1 and v2 GEMM: the same source, launched with the axes swapped; their SASS side by side
python3 - > "$OUT/sass_gemm_v1_v2.txt" 2>&1 <<'PY'
import collections, re
from numba import cuda, float32, int32
from simtlab.kernels import gemm as G
for name in ("gemm_v1_naive", "gemm_v2_coalesced"):
    k = getattr(G, name)
    sig = (float32[:, ::1], float32[:, ::1], float32[:, ::1])
    try:
        k.compile(sig)
        sass = k.inspect_sass(sig)
    except Exception as e:
        print(name, "SASS unavailable:", repr(e)); continue
    ops = collections.Counter(m.group(1) for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass))
    print(f"==== {name}: {sum(ops.values())} instructions ====")
    print(", ".join(f"{op} {n}" for op, n in ops.most_common()))
    print(sass)
PY
ls -la "$OUT"
