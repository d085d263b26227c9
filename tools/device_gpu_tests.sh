#!/usr/bin/env bash
# Run on the lent GPU machine (see the developers' guide): installs the carried wheels
# (.whl: NumPy, numba, numba-cuda, greenlet pinned like pyproject.toml, lark and nvidia-cuda-cccl
# for the PTX engine (the image has NVRTC and the runtime headers, not cccl), and ipywidgets with
# IPython and their pure-Python needs for the playground's GPU tab), the course without
# its dependencies, then the GPU tests. Results go to $OUT.
set -uo pipefail
source tools/device_env.sh || exit 1
python3 - <<'PY'
import importlib.metadata as m
for d in ["numpy", "numba", "llvmlite", "numba-cuda", "cupy-cuda13x", "cuda-bindings", "cuda-core", "greenlet"]:
    try:
        print(d, m.version(d))
    except Exception as e:
        print(d, "missing", e)
import simtlab
print(simtlab.backend_banner())
PY
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" tests/test_*gpu*.py "$@" --junitxml="${OUT:-/tmp}/gpu_tests.xml" 2>&1 | tee "${OUT:-/tmp}/gpu_tests.log"
