#!/usr/bin/env bash
# Chapter 9 on the lent GPU machine: the tensor-core benchmark (every version against cuBLAS
# with the same precision, 4096^3) and the tensor-core GPU tests. Installs the carried wheels
# (.whl) as tools/device_gpu_tests.sh does. Results go to $OUT:
#   tensor_cores_h100.json / .txt   the benchmark (copy to benchmarks/results/)
#   tensor_cores_gpu_tests.log      the GPU tests
#   bash tools/device_tensor_cores.sh      (from the repository root, .whl beside it; ~3 min)
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 || echo "editable install failed"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
python3 - <<'PY'
import importlib.metadata as m
for d in ["numpy", "numba-cuda", "cupy-cuda13x", "cuda-bindings", "torch"]:
    try:
        print(d, m.version(d))
    except Exception as e:
        print(d, "missing", e)
PY
timeout 240 python3 benchmarks/tensor_cores_bench.py --out "$OUT/tensor_cores_h100.json" 2>&1 | tee "$OUT/tensor_cores_bench.log" | tail -45
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider -p no:randomly -o addopts="" tests/test_tensor_cores_gpu.py \
    --junitxml="$OUT/tensor_cores_gpu_tests.xml" > "$OUT/tensor_cores_gpu_tests.log" 2>&1
tail -25 "$OUT/tensor_cores_gpu_tests.log"
