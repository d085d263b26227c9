"""Chapter 6's v8 (CUDA C only, kernels/gemm.cu SgemmPipeline): its configurations as the .cu
declares them, the shared memory its launch plan asks for, and what the trace of a run on the
PTX engine shows (no races between the cp.async ring's writes and the fragment reads, no bank
conflicts). The outputs against NumPy: tests/test_ptx_course_kernels.py (tests/cuda_c_cases.py
has an aligned and an odd case per configuration); on the GPU: tests/test_gemm_v8_gpu.py."""

from __future__ import annotations

import re

import numpy as np
import pytest

from simtlab.kernels import gemm as G
from simtlab.versions import Version

CC = pytest.importorskip("simtlab.cuda_c_kernels")


def _nvrtc():
    try:
        CC.nvrtc_version()
    except CC.CompilerMissing as why:
        pytest.skip(f"NVRTC is not installed ({why})")


def test_every_v8_kernel_line_is_a_configuration_with_a_reason():
    lines = re.findall(r"^V8_KERNEL\((\w+),", G.CU_PATH.read_text(), re.M)
    assert [c.kernel for c in G.V8_CONFIGS] == lines and len(lines) >= 12
    for c in G.V8_CONFIGS:
        assert c.reason, c.kernel
        fm, fn = c.thread_tile
        # the name spells the knobs (the benchmark's table and the chapter read them from it)
        assert c.kernel.startswith(f"gemm_v8_{c.bm}x{c.bn}x{c.bk}_w{c.wm}x{c.wn}_t{fm}x{fn}_s{c.stages}_g{c.group}_b{c.min_blocks}")
        assert (c.wm // c.wmiter // c.tm) * (c.wn // c.wniter // c.tn) == 32   # a warp's lanes cover its sub-tile
        assert c.threads * fm * fn == c.bm * c.bn                              # each output has one owner
    assert G.V8_CHAMPION in lines


def test_the_chapter_row_is_the_champion_in_cuda_c_only():
    row = next(v for v in G.VERSIONS if v.label.startswith("v8 "))
    champion = G.v8_config(G.V8_CHAMPION)
    assert row.label == champion.label and row.label.startswith("v8 ")
    assert row.cuda_c == G.V8_CHAMPION and row.numba is None
    launches, _ = row.launches("cuda-c", np, np.zeros((300, 20), np.float32), np.zeros((20, 500), np.float32))
    assert launches[0].shared == champion.shared_bytes
    assert launches[0].block == (champion.threads,)
    assert launches[0].grid == (G.cdiv(500, champion.bn), G.cdiv(300, champion.bm))
    with pytest.raises(ValueError, match="exists only in CUDA C"):
        G.kernel_of(row.label)


def test_v8_source_keeps_one_configuration_and_every_line():
    text = G.CU_PATH.read_text()
    one = G.v8_source(G.V8_CHAMPION)
    assert one.count("\n") == text.count("\n")
    assert re.findall(r"^V8_KERNEL\((\w+),", one, re.M) == [G.V8_CHAMPION]
    with pytest.raises(KeyError, match="no v8 configuration"):
        G.v8_source("gemm_v8_nothing")


def test_each_configurations_reduced_source_compiles_to_that_kernel_alone():
    _nvrtc()
    for c in G.V8_CONFIGS:
        ptx = CC.compile_ptx(G.v8_source(c.kernel), str(G.CU_PATH))
        assert re.findall(r"\.entry (\w+)", ptx) == [c.kernel]
        assert "cp.async.ca.shared.global" in ptx and "ld.shared.v4.f32" in ptx   # 4-byte copies of A, float4 reads


def _run(config, shared, trace=False):
    m, k, n = config.bm + 3, (config.stages + 1) * config.bk + 4, config.bn + 4
    rng = np.random.default_rng(1)
    a = rng.random((m, k), dtype=np.float32) + np.float32(0.5)
    b = rng.random((k, n), dtype=np.float32) + np.float32(0.5)
    plan = G.GemmPlan((config.bm, config.bn), (config.threads,), shared=shared)
    out, runs = CC.emulate_version("gemm", Version(config.kernel, None, config.kernel, plan, G.gemm_bytes),
                                   a, b, trace=trace)
    return a, b, out, runs


@pytest.mark.parametrize("kernel", ["gemm_v8_128x128x8_w64x32_t8x8_s3_g8_b2", "gemm_v8_128x64x8_w64x32_t8x8_s4_g8_b3"])
def test_the_plan_asks_for_exactly_the_shared_memory_the_ring_uses(kernel):
    _nvrtc()
    config = G.v8_config(kernel)
    a, b, out, _ = _run(config, config.shared_bytes)
    np.testing.assert_allclose(out, G.gemm_cpu(a, b), rtol=1e-5, atol=1e-5)
    with pytest.raises(Exception, match="(?i)shared|bounds"):
        _run(config, config.shared_bytes - 16)          # the last stage's last float4 of B is outside


def test_the_ring_has_no_races_and_its_reads_no_bank_conflicts():
    _nvrtc()
    config = G.v8_config("gemm_v8_128x128x8_w64x32_t8x8_s3_g8_b2")
    a, b, out, (run,) = _run(config, config.shared_bytes, trace=True)
    np.testing.assert_allclose(out, G.gemm_cpu(a, b), rtol=1e-5, atol=1e-5)
    assert run.metrics["races"] == 0                     # every barrier of the ring is where it must be
    assert run.metrics["shared_bank_conflicts"] == 0     # A's transposed 4-byte copies and the float4 reads


# ---- numba's v7 with float4 loads through linked CUDA C (runs on the GPU only) -----------------
def test_the_linked_loads_are_128_bit_in_ptx():
    _nvrtc()
    source = G.numba_device_source()
    assert "extern \"C\" __device__ int gemm_ld_global_f4" in source and "end numba" not in source
    ptx = CC.compile_ptx(source + '\nextern "C" __global__ void probe(float* o, unsigned long long g, '
                         'unsigned long long s) { GemmFloat4 v, w; gemm_ld_global_f4(&v, g); gemm_ld_shared_f4(&w, s);'
                         ' o[0] = v.v[0] + v.v[3] + w.v[1] + w.v[2]; }\n', "probe.cu")
    assert "ld.global.nc.v4.f32" in ptx and "ld.shared.v4.f32" in ptx


def test_the_numba_float4_kernel_compiles_to_ptx_without_a_gpu():
    """numba-cuda's compiler (no GPU needed) types and lowers the kernel: both foreign loads are
    declared and called, and no float64 crept into the address arithmetic. In a subprocess:
    numba.cuda must be numba-cuda's (its redirector), which a session may not have loaded."""
    import subprocess
    import sys

    probe = (
        "import importlib.util\n"
        "if importlib.util.find_spec('_numba_cuda_redirector'): import _numba_cuda_redirector\n"
        "from numba import cuda, float32\n"
        "if getattr(cuda, 'implementation', '') == 'Built-in': print('BUILTIN'); raise SystemExit\n"
        "from simtlab.kernels import gemm as G\n"
        "k = G.numba_v7_float4_kernel()\n"
        "ptx, _ = cuda.compile_ptx(k.py_func, (float32[:, ::1],) * 3, cc=(9, 0))\n"
        "print(ptx)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    if out.stdout.strip() == "BUILTIN" or "No module named 'numba_cuda'" in out.stderr:
        pytest.skip("numba-cuda is not installed: numba's built-in CUDA target cannot link CUDA C")
    assert out.returncode == 0, out.stderr[-2000:]
    ptx = out.stdout
    for name in ("gemm_ld_global_f4", "gemm_ld_shared_f4"):
        assert re.search(rf"\.extern \.func .*{name}", ptx) and re.search(rf"call\.uni[^;]*{name}", ptx, re.S), name
    assert ".f64" not in ptx                              # addresses stay integers (uint64 + uint64)
