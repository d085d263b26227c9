"""Chapter 6's v9 (CUDA C only, kernels/gemm.cu SgemmStaged): its configurations as the .cu
declares them, the chapter's row, the reduced source of one configuration, and what the trace of
a run on the PTX engine shows: no races between the staged stores and the fragment reads, no bank
conflicts in the float4 fragment reads. The outputs against NumPy: tests/test_ptx_course_kernels.py
(tests/cuda_c_cases.py has an aligned and an odd case per configuration); on the GPU:
tests/test_gemm_v8_gpu.py."""

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


def test_every_v9_kernel_line_is_a_configuration_with_a_reason():
    lines = re.findall(r"^V9_KERNEL\((\w+),", G.CU_PATH.read_text(), re.M)
    assert [c.kernel for c in G.V9_CONFIGS] == lines and len(lines) >= 10
    for c in G.V9_CONFIGS:
        assert c.reason, c.kernel
        fm, fn = c.thread_tile
        assert c.kernel.startswith(f"gemm_v9_{c.bm}x{c.bn}x{c.bk}_w{c.warps_m}x{c.warps_n}_t{fm}x{fn}_g{c.group}_b{c.min_blocks}")
        assert c.kernel.endswith("async") == bool(c.asynchronous)
        assert c.threads * fm * fn == c.bm * c.bn                              # each output has one owner
        lanes_m, lanes_n = c.bm // c.warps_m // fm, c.bn // c.warps_n // fn
        assert lanes_m * lanes_n == 32                                        # a warp's lanes cover its tile
    assert G.V9_CHAMPION in lines


def test_the_chapter_row_is_the_v9_champion_with_its_scalar_twin():
    row = G.VERSIONS[-1]
    champion = G.v9_config(G.V9_CHAMPION)
    assert row.label == champion.label and row.label.startswith("v9 ")
    assert row.cuda_c == G.V9_CHAMPION and row.numba is None
    a, b = np.zeros((300, 20), np.float32), np.zeros((20, 500), np.float32)
    launches, _ = row.launches("cuda-c", np, a, b)
    assert launches[0].kernel == G.V9_CHAMPION and launches[0].block == (champion.threads,)
    assert launches[0].grid == (G.cdiv(500, champion.bn), G.cdiv(300, champion.bm))
    launches, _ = row.launches("cuda-c", np, np.zeros((300, 21), np.float32), np.zeros((21, 500), np.float32))
    assert launches[0].kernel == G.V9_CHAMPION + "_scalar"        # K % 4 != 0: rows are not 16-byte aligned


def test_v9_source_keeps_one_configuration_and_compiles_to_its_two_kernels():
    text = G.CU_PATH.read_text()
    one = G.v9_source(G.V9_CHAMPION)
    assert one.count("\n") == text.count("\n")
    assert re.findall(r"^V9_KERNEL\((\w+),", one, re.M) == [G.V9_CHAMPION]
    with pytest.raises(KeyError, match="no v9 configuration"):
        G.v9_source("gemm_v9_nothing")
    _nvrtc()
    ptx = CC.compile_ptx(one, str(G.CU_PATH))
    assert sorted(re.findall(r"\.entry (\w+)", ptx)) == [G.V9_CHAMPION, G.V9_CHAMPION + "_scalar"]
    assert "ld.shared.v4.f32" in ptx and "ld.global.nc.v4.f32" in ptx   # float4 fragments, float4 tile loads


@pytest.mark.parametrize("kernel", ["gemm_v9_128x128x8_w2x2_t16x8_g0_b2", "gemm_v9_128x128x8_w2x4_t8x8_g8_b2",
                                    "gemm_v9_128x128x8_w2x2_t16x8_g8_b2_basync"])
def test_the_staged_tiles_have_no_races_and_the_fragment_reads_no_bank_conflicts(kernel):
    _nvrtc()
    config = G.v9_config(kernel)
    m, k, n = config.bm + 3, 3 * config.bk + 4, config.bn + 4       # three tiles: both buffers reused
    rng = np.random.default_rng(1)
    a = rng.random((m, k), dtype=np.float32) + np.float32(0.5)
    b = rng.random((k, n), dtype=np.float32) + np.float32(0.5)
    out, (run,) = CC.emulate_version("gemm", Version(kernel, None, kernel, config.plan, G.gemm_bytes), a, b, trace=True)
    np.testing.assert_allclose(out, G.gemm_cpu(a, b), rtol=1e-5, atol=1e-5)
    assert run.metrics["races"] == 0                     # one barrier per tile is enough with two buffers
    assert run.metrics["shared_bank_conflicts"] == 0     # 4 x 4 fragment blocks; A's transposed stores padded
