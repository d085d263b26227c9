"""Chapter 9 on the CPU: kernels/tensor_cores.cu compiles (NVRTC, no CUDA header needed) for
compute_90 and, with ptxas, for sm_90a without spills; its exported kernels are the table's; the
NumPy reference, the 16-bit encodings and the error bounds are right."""

from __future__ import annotations

import re

import numpy as np
import pytest

from simtlab.kernels import tensor_cores as T


def _nvrtc_or_skip():
    from simtlab import cuda_c_kernels as CC

    try:
        CC.nvrtc_version()
    except CC.CompilerMissing as e:
        pytest.skip(str(e))
    return CC


# --- the CUDA C file ------------------------------------------------------------------------
def test_compiles_to_ptx_for_compute_90_with_every_kernel_of_the_table():
    CC = _nvrtc_or_skip()
    ptx = CC.compile_ptx(T.CU_PATH.read_text(), str(T.CU_PATH))
    entries = set(re.findall(r"\.visible \.entry (\w+)\(", ptx))
    assert entries == {v.kernel for v in T.VERSIONS}
    assert set(T.exported_kernels()) == entries
    for v in T.VERSIONS:                                   # __launch_bounds__ = the launcher's threads
        body = ptx[ptx.index(f".entry {v.kernel}("):]
        assert re.search(r"\.maxntid (\d+), 1, 1", body).group(1) == str(v.threads), v.kernel
    # compute_90 has no wgmma: v7's body is compiled only for sm_90a
    assert "wgmma.mma_async" not in ptx and "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in ptx


def _entry(ptx: str, name: str) -> str:
    start = ptx.index(f".entry {name}(")
    nxt = ptx.find(".entry ", start + 10)
    return ptx[start:nxt if nxt > 0 else len(ptx)]


def test_each_version_uses_the_instructions_it_claims():
    CC = _nvrtc_or_skip()
    ptx = CC.compile_ptx(T.CU_PATH.read_text(), str(T.CU_PATH), ("--gpu-architecture=sm_90a", "-std=c++17"))
    for v in T.VERSIONS:
        body = _entry(ptx, v.kernel)
        label = v.label.split()[0]
        want = {"v1": ["wmma.mma"], "v2": ["wmma.mma"], "v3": ["wmma.mma", "bar.sync"],
                "v4": ["mma.sync", "ldmatrix"], "v5": ["mma.sync", "ldmatrix"],
                "v6": ["mma.sync", "ldmatrix", "cp.async.cg", "cp.async.wait_group"],
                "v7": ["wgmma.mma_async", "wgmma.wait_group", "cp.async.cg", "fence.proxy.async"]}[label]
        for instruction in want:
            assert instruction in body, f"{v.kernel} has no {instruction}"
        if label in ("v4", "v5"):
            assert "cp.async" not in body, v.kernel
        if label == "v4" or label == "v5" or label == "v6":
            assert ("ldmatrix.sync.aligned.m8n8.x4.trans" in body) == (v.precision != "tf32"), v.kernel


@pytest.mark.slow
def test_sm90a_cubin_has_no_spills_and_ptxas_says_nothing_else():
    _nvrtc_or_skip()
    from simtlab.gpubench import tensor_cores as bench

    built = bench.compile_cubin()
    usage = bench.resource_usage(built["log"])
    assert set(usage) == {v.kernel for v in T.VERSIONS}
    for kernel, u in usage.items():
        assert u["spill_stores"] == 0 and u["spill_loads"] == 0, (kernel, u)
        assert u["registers"] <= 255, (kernel, u)
    assert "warning" not in built["log"].lower(), built["log"]


def test_numba_section_compiles_alone_and_exports_the_device_functions():
    CC = _nvrtc_or_skip()
    ptx = CC.compile_ptx(T.numba_device_source(), "tc_mma.cu", ("--gpu-architecture=compute_90", "-std=c++17", "-rdc=true"))
    for name in ("tc_mma_f16_m16n8k16", "tc_mma_bf16_m16n8k16"):
        assert re.search(rf"\.visible \.func\s+\(\.param \.b32 \w+\) {name}\(", ptx), name


# --- launch configurations --------------------------------------------------------------------
def test_launch_config_refuses_sizes_off_the_tile_and_says_which():
    v = T.find("tc_v6_pipeline_f16")
    with pytest.raises(ValueError, match=r"K = 100 is not a multiple of 32"):
        T.launch_config(v, 128, 256, 100)
    grid, block, smem = T.launch_config(v, 4096, 4096, 4096)
    assert grid == (4096 // 256, 4096 // 128) and block == (256,) and smem == 4 * (128 * 32 + 32 * 256) * 2
    assert T.launch_config(T.find("tc_v1_wmma_tf32"), 48, 80, 24)[0] == (2, 3)   # 5 column tiles over 4 warps
    with pytest.raises(ValueError, match="multiple of 64"):
        T.numba_launch_config(100, 128, 32)


def test_dynamic_shared_memory_fits_an_h100_block():
    limit = 227 * 1024          # the H100's opt-in maximum per block (cudaFuncSetAttribute)
    assert all(v.dynamic_smem <= limit for v in T.VERSIONS), [(v.kernel, v.dynamic_smem) for v in T.VERSIONS]


# --- references and encodings -------------------------------------------------------------------
def test_fp16_encoding_is_numpy_float16():
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(T.decode(T.encode(x, "fp16"), "fp16"), x.astype(np.float16).astype(np.float64))


def test_bf16_rounds_to_the_nearest_bf16_ties_to_even():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(20000).astype(np.float32),
                        # exact ties: the dropped 16 bits are 0x8000
                        ((rng.integers(0x3F80, 0x4000, 200).astype(np.uint32) << 16) | 0x8000).view(np.float32)])
    got = T.decode(T.encode(x, "bf16"), "bf16")
    bits = x.view(np.uint32)
    down = (bits & 0xFFFF0000).view(np.float32).astype(np.float64)
    up = ((bits & 0xFFFF0000) + 0x10000).view(np.float32).astype(np.float64)     # |x| grows: the next bf16 out
    xd = x.astype(np.float64)
    nearer = np.where(np.abs(xd - down) < np.abs(up - xd), down, up)
    tie = np.abs(xd - down) == np.abs(up - xd)
    even = np.where(((bits >> 16) & 1) == 0, down, up)
    np.testing.assert_array_equal(got, np.where(tie, even, nearer))
    assert tie.sum() >= 200


def test_tf32_keeps_ten_mantissa_bits():
    x = np.random.default_rng(2).standard_normal(10000).astype(np.float32)
    for mode, bound in (("truncate", 2.0 ** -10), ("nearest", 2.0 ** -11)):
        r = T.round_to(x, "tf32", tf32=mode)
        assert not (r.astype(np.float32).view(np.uint32) & 0x1FFF).any()
        assert (np.abs(r - x) <= bound * np.abs(x)).all()
    assert (np.abs(T.round_to(x, "tf32", tf32="truncate")) <= np.abs(x)).all()


def test_reference_is_float64_of_the_decoded_inputs():
    a32, b32, a, b = T.inputs(5, 7, 9, "bf16", seed=3)
    want = (T.round_to(a32, "bf16") @ T.round_to(b32, "bf16"))
    np.testing.assert_array_equal(T.gemm_reference(a, b, "bf16"), want)


def _tensor_core_model(a, b, precision, *, skip_tile=None, bk=32):
    """A pessimistic tensor core on the CPU: TF32 inputs truncated, products exact, the running
    sum in float32 truncated toward zero after every add, optionally one k-tile left out."""
    a = T.round_to(a, precision, tf32="truncate") if precision == "tf32" else T.decode(a, precision)
    b = T.round_to(b, precision, tf32="truncate") if precision == "tf32" else T.decode(b, precision)
    acc = np.zeros((a.shape[0], b.shape[1]), np.float64)
    for k in range(a.shape[1]):
        if skip_tile is not None and k // bk == skip_tile:
            continue
        exact = acc + np.outer(a[:, k], b[k])
        rounded = exact.astype(np.float32).astype(np.float64)
        too_far = np.abs(rounded) > np.abs(exact)                  # step back one ulp: truncation
        rounded[too_far] = np.nextafter(rounded[too_far].astype(np.float32), np.float32(0)).astype(np.float64)
        acc = rounded
    return acc


@pytest.mark.parametrize("precision", ["tf32", "fp16", "bf16"])
def test_bound_holds_for_a_truncating_accumulator_and_catches_a_skipped_tile(precision):
    k = 1024
    a32, b32, a, b = T.inputs(8, 8, k, precision, seed=4, positive=True)
    want = T.gemm_reference(a, b, precision)
    assert T.relative_error(_tensor_core_model(a, b, precision), want, a, b, precision) <= T.tolerance(precision, k)
    assert T.relative_error(_tensor_core_model(a, b, precision, skip_tile=5), want, a, b, precision) \
        > T.tolerance(precision, k)
    # against the FP32 sources, the input rounding is in the bound too
    src = a32.astype(np.float64) @ b32.astype(np.float64)
    scale = np.abs(a32.astype(np.float64)) @ np.abs(b32.astype(np.float64))
    err = np.max(np.abs(_tensor_core_model(a, b, precision) - src) / scale)
    assert err <= T.source_tolerance(precision, k)


def test_tolerance_grows_with_k_and_orders_the_precisions():
    assert T.tolerance("tf32", 4096) > T.tolerance("fp16", 4096) == T.tolerance("bf16", 4096) > T.tolerance("fp16", 64)
    assert T.source_tolerance("bf16", 64) > T.source_tolerance("fp16", 64)
    with pytest.raises(ValueError, match="precision"):
        T.tolerance("fp8", 16)
