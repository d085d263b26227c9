#!/usr/bin/env bash
# Run on the lent GPU machine (see the developers' guide): installs the carried wheels
# (.whl: NumPy, numba, numba-cuda, greenlet pinned like pyproject.toml, lark and nvidia-cuda-cccl
# for the PTX engine (the image has NVRTC and the runtime headers, not cccl), and ipywidgets with
# IPython and their pure-Python needs for the playground's GPU tab), the course without
# its dependencies, then the GPU tests. Results go to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 || echo "editable install failed"
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
