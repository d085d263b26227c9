#!/usr/bin/env bash
# Chapter 8 on the lent GPU machine, in one call: the carried wheels (.whl: NumPy, numba,
# numba-cuda, greenlet pinned like pyproject.toml), chapter 8's GPU tests, then the benchmark.
# Results go to $OUT: cnn_gpu_tests.log, cnn_gpu.json, cnn_gpu.log.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
# simtlab.kernels is kernels/ (pyproject's package-dir); without an install, a link makes it importable
[ -e simtlab/kernels ] || ln -sfn ../kernels simtlab/kernels
python3 -c "import simtlab.kernels.cnn" || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" tests/test_cnn_gpu.py 2>&1 | tee "${OUT:-/tmp}/cnn_gpu_tests.log"
python3 benchmarks/gpu_cnn.py --store --out "${OUT:-/tmp}/cnn_gpu.json" 2>&1 | tee "${OUT:-/tmp}/cnn_gpu.log"
