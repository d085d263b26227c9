"""Chapter 6 kernels on the emulator: every version multiplies right on sizes that are not
multiples of its tile, and each has the memory behaviour its comment claims, measured from
the trace (sectors per request, loads per element, reuse, bank conflicts)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import simtlab
from simtlab.analysis import gemm as AG
from simtlab.kernels import gemm as G
from simtlab.source import cu_function_source

CU = Path(G.__file__).with_suffix(".cu")


def emulate_fast(kernel, grid, block, *args):
    simtlab.emulate(kernel, grid, block, *args, trace=False)


def _matrices(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(np.float32),
            rng.standard_normal((k, n)).astype(np.float32))


def _close(got, want, k):
    # float32 sums of k products of N(0,1) numbers: error grows like sqrt(k) ulps of the terms
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * k)


@pytest.mark.parametrize("version", G.NUMBA_VERSIONS)
@pytest.mark.parametrize("m, n, k", [(33, 47, 29), (1, 1, 1), (17, 5, 130)])
def test_every_version_matches_numpy_on_odd_sizes(version, m, n, k):
    a, b = _matrices(m, n, k, seed=m * n + k)
    got = G.gemm_with(version, a, b, emulate_fast)
    _close(got, G.gemm_cpu(a, b), k)
    assert np.all(got != 0)          # every output was written (random N(0,1) products are never exactly 0)


def test_gemm_with_rejects_shapes_that_do_not_multiply():
    with pytest.raises(ValueError, match="do not multiply"):
        G.gemm_with("v3 shared tiles", np.ones((3, 4)), np.ones((5, 2)), emulate_fast)
    with pytest.raises(ValueError, match="unknown version 'v9'; the versions are v1 naive"):
        G.launch_plan("v9", 4, 4)


def test_launch_plans_cover_the_output():
    for v in G.VERSIONS:
        grid, block = G.launch_plan(v.label, 33, 47)
        tm, tn = v.plan.tile
        rows, cols = (grid[0], grid[1]) if v.label == "v1 naive" else (grid[1], grid[0])
        assert rows * tm >= 33 and cols * tn >= 47
        assert (rows - 1) * tm < 33 and (cols - 1) * tn < 47           # no block wholly outside
        assert int(np.prod(block)) * v.plan.per_thread == tm * tn       # each output has one owner


@pytest.fixture(scope="module")
def profiles():
    return {v: AG.profile(AG.trace_version(v, 32, 32, 32)) for v in
            ("v1 naive", "v2 coalesced", "v3 shared tiles", "v4 1-D blocking")}


def test_naive_mapping_is_uncoalesced_and_v2_fixes_it(profiles):
    v1, v2 = profiles["v1 naive"], profiles["v2 coalesced"]
    # v1: a warp is 16 rows x 2 columns of C: 16 rows of A, 16 rows of C -> 16 sectors each
    assert v1["sectors_a"] == 16 and v1["sectors_c"] == 16
    # v2: a warp is 2 rows x 16 columns: A is a broadcast per row, B and C 64 bytes per row
    assert v2["sectors_a"] == 2 and v2["sectors_b"] == 2 and v2["sectors_c"] == 4
    # both load two operands per FMA: one load per FLOP, no reuse
    assert v1["loads_per_flop"] == v2["loads_per_flop"] == 1.0


def test_tiling_divides_global_loads_by_the_tile(profiles):
    v2, v3, v4 = profiles["v2 coalesced"], profiles["v3 shared tiles"], profiles["v4 1-D blocking"]
    assert v3["loads"] * G.TILE == v2["loads"]
    assert v3["reuse"] == G.TILE
    # v4's 64 x 64 tile covers the whole 32 x 32 matrix: each element is loaded exactly once
    assert v4["loads"] == 2 * 32 * 32
    assert v3["bank_conflicts"] == 0 and v3["wavefronts_per_request"] == 1.0


def test_v3_loads_every_element_once_per_block_and_phase_by_phase():
    run = AG.trace_version("v3 shared tiles", 33, 47, 29)
    for block in range(run.num_blocks):
        for name in ("a", "b"):
            counts = AG.loads_per_element(run, name, block)
            assert counts.max() == 1, (block, name)
    phases = AG.tile_map(run, "a", block=0)
    # block 0 covers rows 0-15 of A: K = 29 runs through two phases, columns 0-15 then 16-28
    assert (phases[:16, :16] == 0).all() and (phases[:16, 16:] == 1).all()
    assert (phases[16:] == -1).all()


def test_v4_transposed_store_conflicts_that_v3_avoids(profiles):
    # v4 stores A transposed (sa[k, row]); 8 lanes of a warp share a k and hit the same bank
    assert profiles["v4 1-D blocking"]["bank_conflicts"] > 0
    assert profiles["v4 1-D blocking"]["loads_per_flop"] < profiles["v3 shared tiles"]["loads_per_flop"]


def test_loads_per_flop_napkin_math_matches_the_trace(profiles):
    for version in ("v1 naive", "v2 coalesced", "v3 shared tiles", "v4 1-D blocking"):
        assert G.global_loads(version, 32, 32, 32) == profiles[version]["loads"], version


# ---- the seed's bias + activation epilogue ----------------------------------------------------
def _layer(kernel, w, x, bias, use_bias, act):
    p = np.zeros((w.shape[0], x.shape[1]), np.float32)
    grid = (G.cdiv(x.shape[1], G.TILE), G.cdiv(w.shape[0], G.TILE))
    simtlab.emulate(kernel, grid, (G.TILE, G.TILE), w, x, p, bias, use_bias, act, trace=False)
    return p


@pytest.mark.parametrize("activation", list(G.ACTIVATIONS))
@pytest.mark.parametrize("use_bias", [0, 1])
def test_fixed_epilogue_matches_the_layer(activation, use_bias):
    w, x = _matrices(19, 23, 21, seed=3)
    bias = np.linspace(-2, 2, 19).astype(np.float32)
    got = _layer(G.gemm_bias_act, w, x, bias, use_bias, G.ACTIVATIONS[activation])
    want = G.dense_layer_cpu(w, x, bias if use_bias else None, activation)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_seed_epilogue_loses_the_bias_without_activation():
    w, x = _matrices(19, 23, 21, seed=3)
    bias = np.linspace(1, 2, 19).astype(np.float32)
    seed = _layer(G.gemm_bias_act_seed, w, x, bias, 1, G.ACT_NONE)
    np.testing.assert_allclose(seed, G.dense_layer_cpu(w, x), rtol=1e-5, atol=1e-4)   # bias gone
    assert np.abs(seed - G.dense_layer_cpu(w, x, bias)).min() >= 0.99                # off by >= 1
    # with an activation it stores again, and that second store is right
    seed_sig = _layer(G.gemm_bias_act_seed, w, x, bias, 1, G.ACT_SIGMOID)
    np.testing.assert_allclose(seed_sig, G.dense_layer_cpu(w, x, bias, "sigmoid"), rtol=1e-5, atol=1e-5)


def test_seed_epilogue_writes_twice_fixed_once():
    w, x = _matrices(16, 16, 16)
    bias = np.zeros(16, np.float32)
    runs = {}
    for kernel in (G.gemm_bias_act_seed, G.gemm_bias_act):
        p = np.zeros((16, 16), np.float32)
        runs[kernel] = simtlab.emulate(kernel, (1, 1), (16, 16), w, x, p, bias, 1, G.ACT_SWISH)
    assert len(runs[G.gemm_bias_act_seed].accesses("c", "write")) == 2 * 256
    assert len(runs[G.gemm_bias_act].accesses("c", "write")) == 256


# ---- the CUDA C twin ------------------------------------------------------------------------
def test_every_numba_version_has_a_cuda_c_twin_with_one_comment_line():
    text = CU.read_text()
    for v in G.VERSIONS:
        if v.cuda_c in {c.kernel for c in G.V8_CONFIGS}:     # a V8_KERNEL line under v8's comment
            assert re.search(rf"^// ---- v8: \S[^\n]*\n(?:V8_KERNEL\(.*\n)*V8_KERNEL\({v.cuda_c},", text, re.M)
            continue
        if v.cuda_c in {c.kernel for c in G.V9_CONFIGS}:     # a V9_KERNEL line under v9's comment
            assert re.search(rf"^// ---- v9: \S[^\n]*\n(?:V9_KERNEL\(.*\n)*V9_KERNEL\({v.cuda_c},", text, re.M)
            continue
        src = cu_function_source(CU, v.cuda_c)
        tag = v.label.split()[0]
        assert re.search(rf"^// ---- {tag}: \S", src, re.M), (v.label, src[:200])
    for name in [v.plan.scalar for v in G.VERSIONS if v.plan.scalar and not v.cuda_c.startswith("gemm_v9_")] + [
            "gemm_bias_act_seed", "gemm_bias_act"]:
        assert f"void {name}(" in text or f"\n{name}(" in text, name
    # the launch plan's thread counts are the ones the CUDA C kernels were built for
    assert "#define V7_THREADS %d" % G.THREADS7 in text
    assert "__launch_bounds__(%d, V6_MIN_BLOCKS)" % G.THREADS6 in text
    assert re.search(r"#define V7_MIN_BLOCKS 2\b", text)      # the tuned default (h100_timings.json: topics.gemm)
    assert re.search(r"#define V6_MIN_BLOCKS 1\b", text)      # no cap: the ablation's (256, 2) is not faster
    with pytest.raises(ValueError, match="exists only in CUDA C"):
        G.kernel_of("v6 float4 loads")


def test_float4_versions_fall_back_to_scalar_when_rows_are_not_aligned():
    def cuda_c_kernel(label, m, n, k):
        launches, _ = G.version(label).launches("cuda-c", np, np.zeros((m, k), np.float32),
                                                np.zeros((k, n), np.float32))
        assert len(launches) == 1 and launches[0].args[3:] == (m, n, k)
        return launches[0].kernel
    assert cuda_c_kernel("v7 warp tiling", 64, 64, 64) == "gemm_v7_warptile"
    assert cuda_c_kernel("v7 warp tiling", 64, 64, 63) == "gemm_v7_warptile_scalar"
    assert cuda_c_kernel("v6 float4 loads", 5, 47, 32) == "gemm_v6_float4_scalar"
    assert cuda_c_kernel("v3 shared tiles", 5, 47, 29) == "gemm_v3_tiled"
