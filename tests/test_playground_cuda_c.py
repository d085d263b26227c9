"""CUDA C in the playground and in ``%%simt --cuda``, on the CPU: NVRTC's PTX runs on the PTX
engine and every tab reads the run (checked against NumPy references); on a GPU the same
source runs there too (faked here: the real comparison is in test_playground_gpu.py).
Skipped when NVRTC (the cuda-c extra) is missing."""

from __future__ import annotations

import numpy as np
import pytest

import simtlab
from simtlab import cuda_c_kernels as CC

try:
    CC.nvrtc_version()
except CC.CompilerMissing as why:
    pytest.skip(f"NVRTC is not installed ({why})", allow_module_level=True)

from simtlab.playground import Playground, gpu as G  # noqa: E402
from simtlab.playground.cuda_c import run_cuda_c  # noqa: E402
from simtlab.playground.magic import MagicError  # noqa: E402
from cuda_c_cases import BLOCK_SUM

PNG = b"\x89PNG\r\n\x1a\n"

TWICE = """extern "C" __global__ void twice(const float* __restrict__ a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * a[i];
}"""



@pytest.fixture(scope="module")
def ip():
    from IPython.testing.globalipapp import get_ipython
    shell = get_ipython()            # one shell per session, whichever test file starts it
    shell.run_line_magic("load_ext", "simtlab")
    return shell


def _tab(pg, title):
    return pg.tabs.children[list(pg.tabs.titles).index(title)]


def _html(box) -> str:
    return "".join(str(getattr(c, "value", "")) for c in box.children if isinstance(getattr(c, "value", None), str))


# --- simtlab.playground(cuda_c kernel) ----------------------------------------------------------
def test_playground_runs_a_cuda_c_kernel_and_draws_every_tab():
    k = simtlab.cuda_c(BLOCK_SUM, "block_sum")
    x = np.arange(1000, dtype=np.int32)
    pg = simtlab.playground(k, 8, 128, x, np.zeros(8, np.int32), 1000, gpu=False)
    assert pg.error is None and pg.run.engine == "ptx"
    assert pg.names == ["x", "partial", "n"], "the parameters' CUDA C names"
    expected = np.add.reduceat(x, np.arange(0, 1000, 128))
    assert np.array_equal(pg.outputs["partial"], expected)
    pg.draw_all()
    assert _tab(pg, "mapping").children[-1].value.tobytes().startswith(PNG)
    assert "sectors" in _html(_tab(pg, "memory"))
    assert "SIMT efficiency" in _html(_tab(pg, "divergence"))
    assert _tab(pg, "barriers").children[-1].value.tobytes().startswith(PNG)
    source = _html(_tab(pg, "source"))
    assert "s[t] += s[t + stride];" in source, "the source tab shows the kernel's CUDA C lines"
    assert "one partial sum per block" not in source, "only the kernel's own lines, from its declaration"
    assert "no GPU run" in _html(_tab(pg, "GPU"))


def test_playground_controls_relaunch_and_resize_a_cuda_c_kernel():
    k = simtlab.cuda_c(BLOCK_SUM, "block_sum")
    x = np.arange(1000, dtype=np.int32)
    pg = simtlab.playground(k, 8, 128, x, np.zeros(8, np.int32), 1000, gpu=False)
    pg.controls["block"].value = 64
    assert pg.blockdim == (64, 1, 1) and pg.run.threads_per_block == 64 and pg.previous is not None
    assert np.array_equal(pg.outputs["partial"], x[:512].reshape(8, 64).sum(axis=1))
    pg.draw_all()
    assert "<table" in _html(_tab(pg, "compare"))


def test_cuda_c_playground_errors_name_the_cuda_c_line():
    src = 'extern "C" __global__ void oob(float* a) {\n    a[threadIdx.x + 1] = 1.0f;\n}\n'
    pg = simtlab.playground(simtlab.cuda_c(src, "oob"), 1, 32, np.zeros(32, np.float32), gpu=False)
    assert pg.error is not None and pg.error.line == 2
    pg.draw_all()
    assert "a[threadIdx.x + 1] = 1.0f;" in _html(_tab(pg, "races & errors"))


def test_the_gpu_side_of_a_cuda_c_kernel_runs_its_source_through_cupy():
    k = simtlab.cuda_c(TWICE, "twice")
    assert G._default_launcher(k) is G._cupy_launcher
    assert G._default_launcher(k.entry) is G._numba_launcher


# --- %%simt --cuda ---------------------------------------------------------------------------------
def test_cuda_cell_runs_on_the_cpu_as_a_playground(ip):
    result = ip.run_cell("%%simt --cuda grid=8 block=128 a=rand(1000) out=zeros(1000) n=1000 as=pg\n" + TWICE)
    assert result.success, result.error_in_exec
    pg = result.result
    assert isinstance(pg, Playground) and ip.user_ns["pg"] is pg and pg.run.engine == "ptx"
    assert np.array_equal(pg.outputs["out"], 2 * pg.inputs[0])      # 2.0f * a: exact in float32
    pg.draw_all()
    assert "if (i &lt; n) out[i] = 2.0f * a[i];" in _html(_tab(pg, "source"))
    pg.controls["size"].value = 2000
    assert pg.inputs[2] == 2000 and pg.run.array("a").shape == (2000,), "recipes and n remade"
    covered = 8 * 128                                   # the grid stays 8 x 128
    assert np.array_equal(pg.outputs["out"][:covered], 2 * pg.inputs[0][:covered])
    assert not pg.outputs["out"][covered:].any()


def test_cuda_cell_compile_error_shows_nvrtcs_message_with_the_cells_line(ip):
    bad = TWICE.replace("2.0f * a[i]", "2.0f * b[i]")
    result = ip.run_cell("%%simt --cuda grid=8 block=128 a=rand(1000) out=zeros(1000) n=1000\n" + bad)
    assert not result.success and type(result.error_in_exec).__name__ == "UsageError"
    message = str(result.error_in_exec)
    assert "(3): error" in message and '"b" is undefined' in message


@pytest.mark.parametrize("gpu_factor, agrees", [(2, True), (3, False)])
def test_cuda_cell_on_a_gpu_runs_both_and_compares_the_outputs(monkeypatch, gpu_factor, agrees):
    """A fake GPU (a NumPy launcher): the banner says whether its outputs equal the PTX engine's."""
    def fake_launcher(kernel, griddim, blockdim, args, shared_bytes):
        assert kernel.name == "twice" and args[2] == 1000
        return (lambda: None), (lambda: [None, gpu_factor * args[0], None])
    monkeypatch.setattr(G, "_cupy_launcher", fake_launcher)
    monkeypatch.setattr(G, "_default_timer", lambda fn, repeat: {"median_ms": 0.5, "min_ms": 0.4})
    pg = run_cuda_c("--cuda grid=8 block=128 a=rand(1000) out=zeros(1000) n=1000", TWICE, {}, gpu=True)
    assert pg.gpu_result()[0]["all_match"] is agrees
    banner = pg.banner.value
    assert ("equal the PTX engine's" in banner) is agrees and ("differ" in banner) is not agrees


def test_cuda_cell_without_the_compiler_names_the_install_command(monkeypatch):
    def missing(*_):
        raise CC.CompilerMissing("NVRTC is not installed; install it with: " + CC.INSTALL_HINT)
    monkeypatch.setattr(CC, "cuda_c", missing)
    with pytest.raises(MagicError, match="cuda-c"):
        run_cuda_c("--cuda grid=8 block=128 a=rand(1000) out=zeros(1000) n=1000", TWICE, {}, gpu=False)
