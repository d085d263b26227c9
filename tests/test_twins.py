"""simtlab.twins: a course version's numba kernel and CUDA C twin traced side by side."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("lark")
import simtlab.cuda_c_kernels as CC
from simtlab import twins

try:
    CC._nvrtc()
    HAVE_NVRTC = True
except CC.CompilerMissing:
    HAVE_NVRTC = False
needs_nvrtc = pytest.mark.skipif(not HAVE_NVRTC, reason="no NVRTC (the cuda-c extra)")
rng = np.random.default_rng(7)


@needs_nvrtc
def test_transpose_twins_count_the_same_sectors_and_bank_conflicts():
    x = rng.random((64, 64)).astype(np.float32)
    table = twins.compare_engines("patterns", ["transpose v2 shared tile", "transpose v3 padded tile"], x)
    tile, padded = table.rows()
    for row in (tile, padded):
        for title, _ in twins.METRICS:
            numba, cuda_c = row[title]
            assert numba == pytest.approx(cuda_c), (row["version"], title)
        assert row["outputs written"] == (x.size, x.size, x.size)
        assert row["max |numba - CUDA C|"] == 0.0
    # a 32 x 32 float tile read down a column: 32 lanes in one bank (32 wavefronts), written
    # along a row (1 wavefront); the padded tile spreads the column over 32 banks
    assert tile["wavefronts / request"][1] == (32 + 1) / 2
    assert padded["wavefronts / request"][1] == 1.0


def _seed_stride_outputs(total, grid, block):
    """Outputs the LeNet blog's loop visits: from each global thread id, steps of block*block."""
    return len({i for g in range(grid * block) for i in range(g, total, block * block)})


@needs_nvrtc
def test_the_seeds_grid_stride_bug_shows_in_both_traces():
    from simtlab.kernels import conv

    x = rng.random((2, 1, 20, 20)).astype(np.float32)
    w = rng.random((4, 1, 7, 7)).astype(np.float32) - 0.5
    table = twins.compare_engines("conv", ["v0 blog grid-stride", "v1 direct"], x, w, max_blocks=2)
    seed, direct = table.rows()
    total = 2 * 4 * 14 * 14
    want = _seed_stride_outputs(total, 2, conv.BLOCK)
    assert want < total
    assert seed["outputs written"] == (want, want, total)
    assert direct["outputs written"] == (total, total, total)


@needs_nvrtc
def test_a_float4_store_counts_the_four_elements_it_writes():
    src = """extern "C" __global__ void fill4(float4* out) {
        out[threadIdx.x] = make_float4(1.f, 2.f, 3.f, 4.f);
    }"""
    out = np.zeros(32, np.float32)
    run = simtlab_emulate(CC.cuda_c(src, "fill4"), 1, 8, out)
    assert twins.written_elements(run, 0) == 32
    assert twins.request_widths(run) == [{"space": "global", "kind": "write", "bytes per lane": 16,
                                          "requests": 1}]


def simtlab_emulate(*args, **kwargs):
    import simtlab

    return simtlab.emulate(*args, **kwargs)


def test_request_widths_of_a_numba_kernel():
    import simtlab
    from simtlab.kernels import patterns

    x = rng.random(128).astype(np.float32)
    out = np.zeros_like(x)
    run = simtlab.emulate(patterns.copy_v2_coalesced, 1, 128, x, out)
    assert twins.request_widths(run) == [
        {"space": "global", "kind": "read", "bytes per lane": 4, "requests": 4},
        {"space": "global", "kind": "write", "bytes per lane": 4, "requests": 4}]


def test_without_nvrtc_a_cuda_c_cell_shows_the_install_command(monkeypatch):
    def missing():
        raise CC.CompilerMissing("NVRTC is not installed")

    monkeypatch.setattr(CC, "_nvrtc", missing)
    monkeypatch.setattr(CC, "compile_ptx", lambda *a, **k: missing())
    CC.course_kernel.cache_clear()
    x = rng.random((64, 64)).astype(np.float32)
    note = twins.compare_engines("patterns", "transpose v1 naive", x)
    assert isinstance(note, twins.CudaCMissing)
    assert "pip install" in repr(note) and "cuda-c" in note._repr_html_()
    assert note.ptx_view(0) is note                      # a later cell goes on too
    CC.course_kernel.cache_clear()
