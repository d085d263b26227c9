#!/usr/bin/env bash
# Run on the lent GPU machine: install the carried wheels (.whl) like tools/device_gpu_tests.sh,
# then the GPU bandwidth benchmark of chapters 3-5. Arguments go to benchmarks/gpu_bandwidth.py.
# The results file is written to $OUT/h100_timings.json (copy it to simtlab/data/).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
cp simtlab/data/h100_timings.json "${OUT:-/tmp}/h100_timings.json" 2>/dev/null || true
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
python3 benchmarks/gpu_bandwidth.py --out "${OUT:-/tmp}/h100_timings.json" "$@" 2>&1 | tee "${OUT:-/tmp}/gpu_bandwidth.log"
