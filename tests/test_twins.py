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


EVEN_LANES = sum(1 << lane for lane in range(0, 32, 2))
ODD_LANES = sum(1 << lane for lane in range(1, 32, 2))
ALL_LANES = (1 << 32) - 1


@needs_nvrtc
def test_a_branch_on_parity_stores_from_the_same_lanes_in_both_and_nvrtc_loads_once_before_it():
    x = rng.random(256).astype(np.float32)
    table = twins.compare_twins("divergence", ["branch_by_parity", "branch_by_parity_select"], 1, 256,
                                x, np.zeros_like(x), np.int32(x.size))
    parity = table.pairs[0]
    lanes = {side: [(r["access"], r["lanes"]) for r in twins.request_lanes(run, 3)]
             for side, run in (("numba", parity.numba), ("cuda_c", parity.cuda_c))}
    # numba: each path loads x and stores out with its 16 lanes
    assert lanes["numba"] == [("read x", EVEN_LANES), ("write out", EVEN_LANES),
                              ("read x", ODD_LANES), ("write out", ODD_LANES)]
    # NVRTC hoisted the load above the branch: one 32-lane read, then each path's store
    assert lanes["cuda_c"] == [("read x", ALL_LANES), ("write out", EVEN_LANES), ("write out", ODD_LANES)]
    assert table.rows()[0]["global requests"] == (4 * 8, 3 * 8)
    assert all(r["max |numba - CUDA C|"] == 0.0 for r in table.rows())


@needs_nvrtc
def test_the_if_else_stays_a_branch_in_ptx_and_the_conditional_expression_becomes_a_select():
    from simtlab.plots.ptx_source import ptx_instruction_rows

    x = rng.random(256).astype(np.float32)
    table = twins.compare_twins("divergence", ["branch_by_parity", "branch_by_parity_select"], 1, 256,
                                x, np.zeros_like(x), np.int32(x.size))
    warps = 256 // 32
    branch, select = (ptx_instruction_rows(table.run(i)) for i in (0, 1))
    stores = [r for r in branch if r["ptx"].startswith("st.global")]
    assert [r["lanes_per_warp"] for r in stores] == [16, 16] and all(r["warps"] == warps for r in stores)
    assert not any(r["ptx"].startswith("selp") for r in branch)
    (store,) = [r for r in select if r["ptx"].startswith("st.global")]
    assert store["lanes_per_warp"] == 32
    assert [r["lanes_per_warp"] for r in select if r["ptx"].startswith("selp")] == [32]


@needs_nvrtc
def test_the_mapping_of_a_cuda_c_twin_is_checked_against_the_numba_run():
    from simtlab.kernels import intro

    n = 40
    a, b = np.ones(n, np.float32), np.arange(n, dtype=np.float32)
    same = twins.compare_twins("intro", "vector_add_v2", 2, 8, a, b, np.zeros(n, np.float32), np.int32(n))
    assert same.pairs[0].numba.metrics["global_sectors_per_request"] == \
        same.pairs[0].cuda_c.metrics["global_sectors_per_request"]
    assert "the same block and thread" in same.plot_mapping(0, "out")._suptitle.get_text()
    # a twin that walks the array backwards: element j is written by thread (n - 1 - j) % 16
    backwards = CC.cuda_c(r"""
extern "C" __global__ void vector_add_v2(const float* a, const float* b, float* out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[n - 1 - i] = a[n - 1 - i] + b[n - 1 - i];
}""", "vector_add_v2")
    other = twins.compare_kernels(intro.vector_add_v2, backwards, 2, 8, a, b, np.zeros(n, np.float32), np.int32(n))
    j = np.arange(n)
    moved = int(((j % 16) != ((n - 1 - j) % 16)).sum())
    assert f"{moved} elements written by another thread" in other.plot_mapping(0, "out")._suptitle.get_text()


@needs_nvrtc
def test_the_fused_conv_pool_twin_loads_each_input_patch_once_per_channel():
    from simtlab import cnn_data
    from simtlab.kernels import cnn

    params = cnn.init_params(1)
    x = cnn_data.to_input(cnn_data.load_sample().images[:1])
    table = twins.compare_network(params, x, conv="fused")
    assert [p.version for p in table.pairs] == ["conv1+pool1", "conv2+pool2", "fc1", "fc2", "softmax"]
    k = 5
    for pair, (c, side) in zip(table.pairs[:2], ((1, 12), (6, 4))):
        per_filter = side * side                          # pooled outputs of one map, one image
        blocks = [min(cnn.BLOCK, per_filter - s) for s in range(0, per_filter, cnn.BLOCK)]
        warps = sum(-(-t // 32) for t in blocks) * pair.numba.griddim[1]
        numba, cuda_c = (twins.global_requests_by_array(run) for run in (pair.numba, pair.cuda_c))
        # numba loads 4 inputs per weight; the twin the (K+1) x (K+1) patch under the 4 outputs
        assert numba[("x", "read")][0] == warps * 4 * k * k * c
        assert cuda_c[("x", "read")][0] == warps * (k + 1) ** 2 * c
        assert numba[("w", "read")] == cuda_c[("w", "read")]
        assert numba[("y", "write")] == cuda_c[("y", "write")]
    for row in table.rows()[:4]:
        assert row["max |numba - CUDA C|"] == 0.0


def test_without_nvrtc_the_twins_of_chapters_1_2_and_8_show_the_install_command(monkeypatch):
    def missing(*args, **kwargs):
        raise CC.CompilerMissing("NVRTC is not installed")

    monkeypatch.setattr(CC, "_nvrtc", missing)
    monkeypatch.setattr(CC, "compile_ptx", missing)
    CC.course_kernel.cache_clear()
    x = rng.random(64).astype(np.float32)
    note = twins.compare_twins("divergence", "branch_by_parity", 1, 64, x, np.zeros_like(x), np.int32(64))
    assert isinstance(note, twins.CudaCMissing) and note.lanes(0) is note and note.plot_mapping(0, "out") is note
    from simtlab.kernels import cnn
    from simtlab import cnn_data

    net = twins.compare_network(cnn.init_params(0), cnn_data.to_input(cnn_data.load_sample().images[:1]))
    assert isinstance(net, twins.CudaCMissing) and net.arrays(0) is net
    CC.course_kernel.cache_clear()
