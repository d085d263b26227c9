"""The playground's GPU side on a real GPU: outputs compared with the emulator's, timing, a
CUDA C cell through NVRTC. Skipped without a GPU (the lead runs them on the device)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from gpu_support import requires_gpu
from simtlab.playground import playground
from simtlab.playground.cuda_c import run_cuda_c

pytestmark = [pytest.mark.gpu, requires_gpu]


@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def racy_total(x, total):
    i = cuda.grid(1)
    if i < x.size:
        total[0] = total[0] + x[i]


def test_gpu_tab_agrees_with_the_emulator_and_times_the_kernel():
    n = 1 << 16
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    y = np.ones(n, np.float32)
    pg = playground(saxpy, n // 256, 256, np.float32(2), x, y, np.zeros(n, np.float32), nbytes=12 * n,
                    max_traced_threads=4096)
    result, reason = pg.gpu_result()
    assert reason == "" and result["all_match"], result["outputs"]
    assert result["median_ms"] > 0 and result["gbps"] > 1
    pg.draw_all()
    assert "GPU and emulator agree" in pg.tabs.children[6].children[0].value


def test_a_race_gives_a_different_answer_on_the_gpu():
    x = np.ones(4096, np.float32)
    pg = playground(racy_total, 16, 256, x, np.zeros(1, np.float32))
    assert pg.run.metrics["races"] > 0
    result, _ = pg.gpu_result()
    # the emulator runs threads one by one and gets 4096; the GPU's threads overwrite each other
    assert not result["outputs"]["total"]["match"]


def test_cuda_c_cell_runs_on_the_cpu_and_the_gpu_and_they_agree():
    code = """extern "C" __global__ void twice(const float* a, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = 2.0f * a[i];
    }"""
    ns = {"a0": np.arange(1000, dtype=np.float32)}
    pg = run_cuda_c("--cuda grid=8 block=128 a=a0 out=zeros(1000) n=1000", code, ns)
    assert pg.run.engine == "ptx" and np.array_equal(pg.outputs["out"], 2 * ns["a0"])
    result, reason = pg.gpu_result()
    assert reason == "" and result["all_match"] and result["median_ms"] > 0
    assert "equal the PTX engine's" in pg.banner.value
