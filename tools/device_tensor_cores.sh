#!/usr/bin/env bash
# Chapter 9 on the lent GPU machine: the tensor-core benchmark (every version and the v6 sweep
# against cuBLAS with the same precision, 4096^3) and the tensor-core GPU tests (every version
# and sweep configuration against float64). Installs the carried wheels (.whl) as
# tools/device_gpu_tests.sh does. Each part has its own timeout, the whole run stays under
# 6 minutes; results go to $OUT:
#   tensor_cores_h100.json / .txt   the benchmark; the .txt ends with the best v6 per precision
#   tensor_cores_bench.log          its log
#   tensor_cores_gpu_tests.log/.xml the GPU tests
#   tensor_cores_resources.txt      cuobjdump's registers / local memory per kernel (spill check)
#   bash tools/device_tensor_cores.sh      (from the repository root, .whl beside it)
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
START=$SECONDS
source tools/device_env.sh || exit 1
export PYTHONPATH=$PYTHONPATH:$PWD
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
python3 - <<'PY'
import importlib.metadata as m
for d in ["numpy", "numba-cuda", "cupy-cuda13x", "cuda-bindings", "torch"]:
    try:
        print(d, m.version(d))
    except Exception as e:
        print(d, "missing", e)
PY
# 1. benchmark: stops starting new rows after 200 s, killed at 250 s
timeout 250 python3 benchmarks/tensor_cores_bench.py --budget 200 --out "$OUT/tensor_cores_h100.json" \
    > "$OUT/tensor_cores_bench.log" 2>&1
echo "benchmark rc=$? after $((SECONDS - START)) s"
grep -E "^(best|cuBLAS|v[0-9])|rows measured" "$OUT/tensor_cores_bench.log" | tail -70
# 2. resource usage from the CUBIN itself (independent of the compiler's -v log)
python3 - > "$OUT/tensor_cores_resources.txt" 2>&1 <<'PY'
import tempfile, pathlib, subprocess, shutil
from simtlab.gpubench import tensor_cores as bench
built = bench.compile_cubin()
path = pathlib.Path(tempfile.mkdtemp()) / "tc.cubin"
path.write_bytes(built["cubin"])
tool = shutil.which("cuobjdump")
print(subprocess.run([tool, "--dump-resource-usage", str(path)], capture_output=True, text=True).stdout if tool else "no cuobjdump")
PY
# 3. GPU tests, killed at 80 s
PYTHONPATH=/tmp/site timeout 80 python3 -m pytest -m gpu -q -p no:cacheprovider -p no:randomly -o addopts="" tests/test_tensor_cores_gpu.py \
    --junitxml="$OUT/tensor_cores_gpu_tests.xml" > "$OUT/tensor_cores_gpu_tests.log" 2>&1
echo "gpu tests rc=$? after $((SECONDS - START)) s"
tail -25 "$OUT/tensor_cores_gpu_tests.log"
