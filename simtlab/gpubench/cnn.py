"""Chapter 8 on a GPU: the network's forward pass from the course's kernels, and the same
network in PyTorch (cuDNN, FP32, TF32 off) to hold it against.

- :func:`course_forward`: ``(run, out, steps)``: ``run()`` enqueues one forward pass of
  kernels/cnn.py's plan (numba-cuda or CUDA C) on CuPy arrays; ``steps`` maps each layer to a
  function enqueuing that layer alone (the per-layer timing table).
- :func:`torch_model`: the same network and weights as ``torch.nn`` layers, and its layers one
  by one.
- :func:`capture_graph`: a CUDA graph of any enqueueing function (CuPy stream capture).
"""

from __future__ import annotations

import numpy as np

from ..kernels import cnn
from .launch import bind

__all__ = ["course_forward", "torch_model", "torch_layers", "capture_graph", "to_gpu_params"]


def to_gpu_params(params: dict) -> dict:
    import cupy

    return {k: cupy.asarray(v, cupy.float32) for k, v in cnn.check_params(params).items()}


def course_forward(params_gpu: dict, x_gpu, impl: str = "cuda-c", conv: str = "fused", fc: str = "gemm"):
    """``(run, out, steps)`` for one forward pass of ``x_gpu`` (CuPy, (B, 1, 28, 28))."""
    plan, out = cnn.network_plan(params_gpu, x_gpu, xp=__import__("cupy"), impl=impl, conv=conv, fc=fc)
    steps = {}
    for layer, launches in plan:
        bound = [bind(impl, cnn.TOPIC, s.kernel, s.grid, s.block, *s.args, shared=s.shared) for s in launches]

        def step(bound=bound):
            for b in bound:
                b()
        step.keep = bound
        steps[layer] = step

    def run():
        for s in steps.values():
            s()
    run.keep = (plan, x_gpu, params_gpu)
    return run, out, steps


def capture_graph(run):
    """``(replay, stream)``: ``replay()`` launches a CUDA graph of what ``run()`` enqueues, on a
    non-blocking stream (a capture cannot use the legacy default stream)."""
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        run()                                  # compile and load every kernel outside the capture
        stream.synchronize()
        stream.begin_capture()
        run()
        graph = stream.end_capture()

    def replay():
        graph.launch(stream)
    replay.keep = (graph, run)
    return replay, stream


def torch_model(params: dict):
    """The network as ``torch.nn`` modules on the GPU, float32, with ``params``' weights."""
    import torch
    from torch import nn

    p = cnn.check_params(params)
    model = nn.Sequential(
        nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 10), nn.Softmax(dim=1))
    with torch.no_grad():
        for module, name in ((model[0], "conv1"), (model[3], "conv2"), (model[7], "fc1"), (model[9], "fc2")):
            module.weight.copy_(torch.from_numpy(p[name + "_w"]))
            module.bias.copy_(torch.from_numpy(p[name + "_b"]))
    return model.cuda().eval()


def torch_layers(model) -> dict:
    """The model's layers grouped as the course's plan names them: layer -> modules."""
    return {"conv1": model[0:2], "pool1": model[2:3], "conv2": model[3:5], "pool2": model[5:6],
            "fc1": model[6:9], "fc2": model[9:10], "softmax": model[10:11]}

