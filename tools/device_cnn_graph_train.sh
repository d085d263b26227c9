#!/usr/bin/env bash
# Chapter 8 on the lent GPU machine, in one call: its GPU tests (numba's forward captured in a CUDA
# graph, cuDNN's fused conv + bias + ReLU in a subprocess), benchmarks/gpu_cnn_graph_fused.py
# (stored as topics.cnn_graph_fused of simtlab/data/h100_timings.json) and the PyTorch training
# of the network's weights. Carry .whl (the wheels, see tools/device_env.sh) and .data (made here
# first by python tools/export_fashion_npz.py). Results under $OUT: cnn_gpu_tests.log,
# cnn_graph_fused.json/.log, h100_timings.json (the store with the new entry),
# cnn_weights_trained.npz, cnn_training.json/.log.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
[ -f .data/fashion_mnist.npz ] || { echo "carry .data: python tools/export_fashion_npz.py makes it"; exit 1; }
source tools/device_env.sh || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" tests/test_cnn_gpu.py 2>&1 | tee "$OUT/cnn_gpu_tests.log"
python3 benchmarks/gpu_cnn_graph_fused.py --store --out "$OUT/cnn_graph_fused.json" 2>&1 | tee "$OUT/cnn_graph_fused.log"
cp simtlab/data/h100_timings.json "$OUT/h100_timings.json"
python3 tools/train_cnn_torch.py --data .data/fashion_mnist.npz --out "$OUT/cnn_weights_trained.npz" \
    --log "$OUT/cnn_training.json" 2>&1 | tee "$OUT/cnn_training.log"
ls -la "$OUT"
