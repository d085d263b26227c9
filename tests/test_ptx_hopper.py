"""Hopper's instructions on the PTX engine (sm_90a): wgmma's matrix descriptors and swizzles
against the PTX ISA's own layout examples, small wgmma / mbarrier / TMA kernels against NumPy,
and the errors that name what the engine does not run. Chapter 9's v7 and v8 run in
tests/test_ptx_course_kernels.py (tests/cuda_c_cases.py), and on a GPU in
tests/test_ptx_engine_gpu.py."""

from __future__ import annotations

import numpy as np
import pytest

import simtlab
from simtlab import cuda_c_kernels as CC
from simtlab.emulator import BarrierError, EmulationError, LaunchError, WarpCollectiveError
from simtlab.emulator.ptx import wgmma as W
from simtlab.emulator.ptx.tensor_ops import tf32_round_nearest_even
from simtlab.emulator.ptx.tma import TensorMap

try:
    CC.nvrtc_version()
except CC.CompilerMissing as why:
    pytest.skip(f"NVRTC is not installed ({why})", allow_module_level=True)


# --- the sm_90a path ---------------------------------------------------------------------------------
def test_a_source_with_sm90a_code_compiles_for_compute_90a_and_others_for_compute_90():
    guarded = "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n#endif\n" + 'extern "C" __global__ void k() {}\n'
    plain = 'extern "C" __global__ void k() {}\n'
    assert CC.ptx_options(guarded) == CC.PTX_OPTIONS_SM90A
    assert CC.ptx_options(plain) == CC.PTX_OPTIONS
    assert ".target sm_90a" in CC.compile_ptx(guarded)
    assert ".target sm_90\n" in CC.compile_ptx(plain)
    # the cache key holds the options, so the two PTX of one source are kept apart
    assert CC._cache_path(plain, "k.cu", CC.PTX_OPTIONS) != CC._cache_path(plain, "k.cu", CC.PTX_OPTIONS_SM90A)


# --- descriptors (PTX ISA 9.7.15.5.1.2) ------------------------------------------------------------
def _descriptor(start, leading, stride, mode, base_offset=0):
    """The ISA's bit fields: start, LBO, SBO each (x & 0x3FFFF) >> 4 at bits 0, 16, 32; base
    offset at 49; swizzle mode at 62."""
    enc = lambda x: (x & 0x3FFFF) >> 4          # noqa: E731
    return enc(start) | enc(leading) << 16 | enc(stride) << 32 | base_offset << 49 | mode << 62


def test_descriptor_fields_decode_as_the_isa_lays_them_out():
    # v7's A descriptor: wgmma_desc(addr, 16, 1024) with 128-byte swizzle (mode 1)
    d = W.decode_descriptor(_descriptor(0x2420, 16, 1024, 1))
    assert (d.start, d.leading, d.stride, d.base_offset, d.swizzle) == (0x2420, 16, 1024, 0, 128)
    d = W.decode_descriptor(_descriptor(0x3FFF0, 8192, 0x3FFF0, 3, base_offset=5))
    assert (d.start, d.leading, d.stride, d.base_offset, d.swizzle) == (0x3FFF0, 8192, 0x3FFF0, 5, 32)
    assert W.decode_descriptor(_descriptor(0, 0, 0, 2)).swizzle == 64
    assert W.decode_descriptor(_descriptor(0, 0, 0, 0)).swizzle == 0


def _cute_swizzle(bits, byte_offsets):
    """CuTe's Swizzle<B,4,3> (the ISA's table names it): y = x ^ ((x & (2^B - 1) << 7) >> 3)."""
    x = np.asarray(byte_offsets, np.int64)
    return x ^ ((x & (((1 << bits) - 1) << 7)) >> 3)


def _exact(shape, stride, rows, cols):
    """A CuTe layout ``((r...),(c...)):((sr...),(sc...))`` of the ISA's examples as an
    ``(rows, cols)`` table of element offsets."""
    (rshape, cshape), (rstride, cstride) = shape, stride

    def offsets(n, shape_, stride_):
        out = np.zeros(n, np.int64)
        idx = np.arange(n)
        for s, d in zip(shape_, stride_):
            out += (idx % s) * d
            idx //= s
        return out
    return offsets(rows, rshape, rstride)[:, None] + offsets(cols, cshape, cstride)[None, :]


# the ISA's examples (9.7.15.5.1.2.1.3): (major, swizzle bytes, element bytes, LBO, SBO in bytes,
# the exact layout and its Swizzle<B,4,3>); rows are M/N, columns K
ISA_EXAMPLES = {
    "K-major, no swizzle, tf32": (False, 0, 4, 64 * 4, 32 * 4, (((8, 2), (4, 4)), ((4, 32), (1, 64))), 0),
    "K-major, 32B swizzle, tf32": (False, 32, 4, 16, 64 * 4, (((8, 2), (4, 4)), ((8, 64), (1, 4))), 1),
    "MN-major, no swizzle, bf16": (True, 0, 2, 128 * 2, 64 * 2, (((8, 1, 2), (8, 2)), ((1, 8, 64), (8, 128))), 0),
    "MN-major, 32B swizzle, bf16": (True, 32, 2, 128 * 2, 256 * 2, (((8, 2, 2), (8, 2)), ((1, 8, 128), (16, 256))), 1),
    "MN-major, 64B swizzle, bf16": (True, 64, 2, 256 * 2, 512 * 2, (((8, 4, 2), (8, 2)), ((1, 8, 256), (32, 512))), 2),
}


@pytest.mark.parametrize("name", ISA_EXAMPLES)
def test_descriptor_addresses_follow_the_isa_layout_examples(name):
    mn_major, swizzle, e, lbo, sbo, (shape, stride), bits = ISA_EXAMPLES[name]
    rows = int(np.prod(shape[0]))
    cols = int(np.prod(shape[1]))
    start = 4096                                   # a 1024-byte boundary: base offset 0
    mode = {0: 0, 128: 1, 64: 2, 32: 3}[swizzle]
    d = W.decode_descriptor(_descriptor(start, lbo, sbo, mode))
    got = W.operand_addresses(d, rows, cols, e, mn_major)
    want = start + _cute_swizzle(bits, _exact(shape, stride, rows, cols) * e)
    assert np.array_equal(got, want)


def test_the_128_byte_swizzle_moves_chunk_c_of_row_r_to_chunk_c_xor_r():
    """The ISA's 128B pattern (and v7's layout): 16-byte chunk c of the r-th 128-byte row of a
    1024-byte aligned tile is stored at chunk c ^ (r % 8), within the same row."""
    rows = np.arange(16)[:, None]
    chunks = np.arange(8)[None, :]
    linear = 2048 + rows * 128 + chunks * 16
    physical = W.swizzle(linear, 128)
    assert np.array_equal(physical, 2048 + rows * 128 + (chunks ^ (rows % 8)) * 16)
    assert physical[1].tolist() == [2048 + 128 + 16 * c for c in (1, 0, 3, 2, 5, 4, 7, 6)]
    # 32B: chunk bit 0 flips on odd 128-byte rows; 64B: chunk bits 0-1 take rows' bits 0-1
    assert np.array_equal(W.swizzle(linear, 32), 2048 + rows * 128 + (chunks ^ (rows % 2)) * 16)
    assert np.array_equal(W.swizzle(linear, 64), 2048 + rows * 128 + (chunks ^ (rows % 4)) * 16)
    assert np.array_equal(W.swizzle(linear, 0), linear)


def test_accumulator_layout_is_each_warps_mma_c_fragment_of_its_16_rows():
    """PTX ISA Figure 149: thread t of the warpgroup (warp w, lane l) holds D[16w + l/4 + 8 (i%4 >= 2)]
    [8 (i/4) + 2 (l%4) + i%2] in register i."""
    lay = W.d_layout(256)
    assert lay.shape == (128, 128, 2)
    for t, i in [(0, 0), (0, 3), (37, 5), (127, 126), (64, 64)]:
        w, l = t // 32, t % 32
        assert tuple(lay[t, i]) == (16 * w + l // 4 + 8 * ((i % 4) >= 2), 8 * (i // 4) + 2 * (l % 4) + i % 2)
    # every element of the 64 x 256 tile exactly once
    assert len({tuple(x) for x in lay.reshape(-1, 2)}) == 64 * 256


# --- a wgmma kernel: descriptors without swizzle, scale-d, imm-scale-a ---------------------------
WGMMA = r"""
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ unsigned long long desc(const void* p, unsigned lbo, unsigned sbo, unsigned long long extra)
{
    unsigned a = (unsigned)__cvta_generic_to_shared(p);
    return (unsigned long long)((a & 0x3FFFF) >> 4) | ((unsigned long long)((lbo & 0x3FFFF) >> 4) << 16)
         | ((unsigned long long)((sbo & 0x3FFFF) >> 4) << 32) | extra;
}
#endif
// D (64 x 8) = -A (64 x 16) B (16 x 8) [+ 1]: A and B^T K-major, 8 x 16-byte core matrices
// (no swizzle), the next along K at LBO = 128 bytes, the next 8 rows at SBO = 256 bytes
extern "C" __global__ void wg_f16(const unsigned short* A, const unsigned short* Bt, float* D,
                                  int scale_d, unsigned long long extra)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    __shared__ __align__(128) unsigned short sa[64 * 16];
    __shared__ __align__(128) unsigned short sb[8 * 16];
    const int t = threadIdx.x;
    for (int i = t; i < 64 * 16; i += blockDim.x) {
        const int r = i / 16, k = i % 16;
        sa[((r % 8) * 16 + (r / 8) * 256 + (k % 8) * 2 + (k / 8) * 128) / 2] = A[i];
    }
    for (int i = t; i < 8 * 16; i += blockDim.x) {
        const int n = i / 16, k = i % 16;
        sb[(n * 16 + (k % 8) * 2 + (k / 8) * 128) / 2] = Bt[i];
    }
    __syncthreads();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    float d[4] = {1.f, 1.f, 1.f, 1.f};
    const unsigned long long da = desc(sa, 128, 256, extra), db = desc(sb, 128, 256, 0);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, p, -1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db), "r"(scale_d));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    const int w = t / 32, l = t % 32, row = 16 * w + l / 4, col = 2 * (l % 4);
    D[row * 8 + col] = d[0];
    D[row * 8 + col + 1] = d[1];
    D[(row + 8) * 8 + col] = d[2];
    D[(row + 8) * 8 + col + 1] = d[3];
#endif
}
// FP16 accumulators: a form the engine refuses
extern "C" __global__ void wg_f16_acc(unsigned* D)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    unsigned d0 = 0, d1 = 0;
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%0, %1}, %2, %3, p, 1, 1, 0, 0;\n}\n"
                 : "+r"(d0), "+r"(d1) : "l"(0ull), "l"(0ull), "r"(1));
    D[threadIdx.x] = d0 + d1;
#endif
}
"""


def _wgmma_inputs(seed=4):
    rng = np.random.default_rng(seed)
    a = rng.integers(-4, 5, (64, 16)).astype(np.float16)         # small integers: every sum exact
    b = rng.integers(-4, 5, (16, 8)).astype(np.float16)
    return a, b


@pytest.mark.parametrize("scale_d", [1, 0])
def test_wgmma_from_descriptors_equals_numpy(scale_d):
    a, b = _wgmma_inputs()
    d = np.zeros((64, 8), np.float32)
    simtlab.emulate(simtlab.cuda_c(WGMMA, "wg_f16"), 1, 128, a.view(np.uint16), np.ascontiguousarray(b.T).view(np.uint16),
                    d, np.int32(scale_d), np.uint64(0))
    want = -(a.astype(np.float64) @ b.astype(np.float64)) + (1.0 if scale_d else 0.0)
    assert np.array_equal(d, want.astype(np.float32))


def test_wgmma_with_fp16_accumulators_is_refused_by_name():
    with pytest.raises(EmulationError) as err:
        simtlab.emulate(simtlab.cuda_c(WGMMA, "wg_f16_acc"), 1, 128, np.zeros(128, np.uint32))
    text = str(err.value)
    assert ".f16 accumulators" in text and ".m64nNk16.f32.f16.f16" in text and "accumulate in float" in text


def test_wgmma_in_a_block_smaller_than_a_warpgroup_is_a_collective_error():
    a, b = _wgmma_inputs()
    with pytest.raises(WarpCollectiveError, match="warpgroup"):
        simtlab.emulate(simtlab.cuda_c(WGMMA, "wg_f16"), 1, 64, a.view(np.uint16), np.ascontiguousarray(b.T).view(np.uint16),
                        np.zeros((64, 8), np.float32), np.int32(1), np.uint64(0))


def test_a_swizzled_descriptor_with_a_base_offset_is_refused_with_the_fix():
    a, b = _wgmma_inputs()
    extra = np.uint64((1 << 62) | (3 << 49))                     # 128B swizzle, base offset 3
    with pytest.raises(EmulationError) as err:
        simtlab.emulate(simtlab.cuda_c(WGMMA, "wg_f16"), 1, 128, a.view(np.uint16), np.ascontiguousarray(b.T).view(np.uint16),
                        np.zeros((64, 8), np.float32), np.int32(1), extra)
    assert "base offset of 3" in str(err.value) and "1024 bytes" in str(err.value.fix)


# --- mbarrier and TMA ----------------------------------------------------------------------------------
TMA = r"""
struct __align__(64) Map { unsigned long long opaque[16]; };
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ void init(unsigned bar, unsigned count)
{ asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory"); }
__device__ void arrive(unsigned bar)
{ asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory"); }
__device__ bool try_wait(unsigned bar, unsigned parity)
{
    unsigned done;
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.b32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done;
}
__device__ bool test_wait(unsigned bar, unsigned parity)
{
    unsigned done;
    asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.b32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done;
}
#endif
// one TMA box (32 floats x 8 rows, 128-byte swizzle) at (c0, c1) into shared memory, then the
// shared bytes as they landed copied out
extern "C" __global__ void tma_box(const __grid_constant__ Map map, float* out, int c0, int c1)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    __shared__ __align__(1024) float tile[8 * 32];
    __shared__ __align__(8) unsigned long long bar;
    if (threadIdx.x == 0) {
        init(smem(&bar), 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(smem(&bar)), "r"(8 * 32 * 4) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                     :: "r"(smem(tile)), "l"(&map), "r"(c0), "r"(c1), "r"(smem(&bar)) : "memory");
    }
    while (!try_wait(smem(&bar), 0)) {}
    for (int i = threadIdx.x; i < 8 * 32; i += blockDim.x) out[i] = tile[i];
#endif
}
// warp 1 spins on test_wait until warp 0 has written and arrived; arrivals = `count` expected
extern "C" __global__ void handoff(float* out, int count)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    __shared__ float value;
    __shared__ __align__(8) unsigned long long bar;
    if (threadIdx.x == 0) init(smem(&bar), count);
    __syncthreads();
    if (threadIdx.x >= 32) {
        while (!test_wait(smem(&bar), 0)) {}
        out[threadIdx.x - 32] = value;
    } else if (threadIdx.x == 0) {
        value = 42.f;
        arrive(smem(&bar));
    }
#endif
}
"""


def _expected_box(x, c0, c1, rows=8, cols=32):
    """The box at (c0, c1), zeros outside the tensor, its bytes placed by the 128-byte swizzle:
    16-byte chunk c of row r at chunk c ^ (r % 8) (the tile is 1024-byte aligned)."""
    box = np.zeros((rows, cols), np.float32)
    for r in range(rows):
        for c in range(cols):
            gr, gc = c1 + r, c0 + c
            if 0 <= gr < x.shape[0] and 0 <= gc < x.shape[1]:
                box[r, c] = x[gr, gc]
    out = np.zeros_like(box)
    for r in range(rows):
        for chunk in range(8):
            out[r, 4 * (chunk ^ (r % 8)):4 * (chunk ^ (r % 8)) + 4] = box[r, 4 * chunk:4 * chunk + 4]
    return out.ravel()


@pytest.mark.parametrize("c0, c1", [(0, 0), (32, 5), (48, -3)])
def test_tma_box_lands_swizzled_with_zeros_outside_the_tensor(c0, c1):
    x = np.arange(20 * 64, dtype=np.float32).reshape(20, 64) + 1
    out = np.zeros(8 * 32, np.float32)
    run = simtlab.emulate(simtlab.cuda_c(TMA, "tma_box"), 1, 64, TensorMap(x, (32, 8), 128), out,
                          np.int32(c0), np.int32(c1))
    assert np.array_equal(out, _expected_box(x, c0, c1))
    # traced: the thread's global reads cover exactly the box's elements inside the tensor
    reads = run.accesses("map", "read")
    inside = sum(0 <= c1 + r < 20 for r in range(8)) * min(32, 64 - c0)
    assert reads["width"].sum() == inside * 4 and set(reads["thread"].tolist()) == {0}


def test_a_tf32_tensor_map_lands_the_box_rounded_to_nearest_even():
    """The same box through a map that says TF32: every element rounded to TF32, ties to even (measured on the H100:
    benchmarks/tensor_cores_tma_rounding.py), its low 13 bits zero; the map's tensor itself is untouched."""
    ulp = 2.0 ** -10
    x = (np.arange(20 * 64, dtype=np.float32).reshape(20, 64) % 7 + 1) * np.float32(1 + 3 * ulp / 4)   # rounds up
    x[::2, ::3] = 1 + ulp / 2                                     # a tie: to even, 1
    x[1::4, 1::5] = -(1 + 3 * ulp / 2)                            # a tie: to even, -(1 + 2 ulp)
    original = x.copy()
    out = np.zeros(8 * 32, np.float32)
    simtlab.emulate(simtlab.cuda_c(TMA, "tma_box"), 1, 64, TensorMap(x, (32, 8), 128, tf32=True), out,
                    np.int32(16), np.int32(3))
    want = _expected_box(tf32_round_nearest_even(x.view(np.uint32)).view(np.float32), 16, 3)
    assert np.array_equal(out, want) and not (out.view(np.uint32) & 0x1FFF).any()
    assert {1.0, -(1 + 2 * ulp)} <= set(out.tolist()) and np.array_equal(x, original)


def test_tf32_round_nearest_even_rounds_ties_to_even_and_carries_into_the_exponent():
    f = lambda *v: np.array(v, np.float32).view(np.uint32)
    got = tf32_round_nearest_even(f(1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -11 + 2.0 ** -23, -(1 + 2.0 ** -12),
                               2 - 2.0 ** -23, 3.4028235e38, 0.0)).view(np.float32)
    assert got.tolist() == [1.0, 1 + 2.0 ** -9, 1 + 2.0 ** -10, -1.0, 2.0, np.inf, 0.0]
    special = f(np.inf, -np.inf, np.nan)
    assert np.array_equal(tf32_round_nearest_even(special), special)    # unchanged, not rounded into another value


def test_a_tf32_tensor_map_takes_float32_only():
    with pytest.raises(ValueError, match="float32 elements, not int32"):
        TensorMap(np.zeros((8, 32), np.int32), (32, 8), 128, tf32=True)
    from simtlab.gpubench.tensor_cores import tensor_map
    with pytest.raises(ValueError, match="only float32 tensors round to TF32"):
        tensor_map(np.zeros((8, 64), np.uint16), (64, 8), rounds_to_tf32=True)


def test_test_wait_spins_until_the_other_warp_arrives():
    out = np.zeros(32, np.float32)
    simtlab.emulate(simtlab.cuda_c(TMA, "handoff"), 1, 64, out, np.int32(1))
    assert np.array_equal(out, np.full(32, 42, np.float32))


def test_a_phase_that_never_completes_stops_the_launch_naming_the_barrier():
    with pytest.raises(BarrierError) as err:              # two arrivals expected, one comes
        simtlab.emulate(simtlab.cuda_c(TMA, "handoff"), 1, 64, np.zeros(32, np.float32), np.int32(2))
    assert "never completes" in str(err.value) and "1 of 2 arrivals" in str(err.value)


def test_tensor_map_parameters_take_a_tensor_map_and_nothing_else():
    x = np.zeros((8, 32), np.float32)
    with pytest.raises(LaunchError, match="CUtensorMap"):
        simtlab.emulate(simtlab.cuda_c(TMA, "tma_box"), 1, 64, x, np.zeros(256, np.float32), np.int32(0), np.int32(0))
    with pytest.raises(ValueError, match="at most 128 bytes wide"):
        TensorMap(np.zeros((8, 64), np.float32), (48, 8), 128)
    with pytest.raises(ValueError, match="multiple of 16"):
        TensorMap(np.zeros((8, 64), np.float32), (2, 8), 0)


# --- setmaxnreg: a producer warpgroup gives its registers to the consumers --------------------------
_SETMAXNREG = r'''
extern "C" __global__ void __launch_bounds__(256, 1) roles(float* out)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    if (threadIdx.x < 128) {                       // the producer warpgroup: fewer registers, then leaves
        asm volatile("setmaxnreg.dec.sync.aligned.u32 DEC;\n" ::: "memory");
        out[threadIdx.x] = 1.0f;
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 INC;\n" ::: "memory");
    out[threadIdx.x] = 2.0f + threadIdx.x;
#endif
}
'''


def test_setmaxnreg_runs_and_each_warpgroup_goes_on():
    out = np.zeros(256, np.float32)
    simtlab.emulate(simtlab.cuda_c(_SETMAXNREG.replace("DEC", "40").replace("INC", "232"), "roles"), 1, 256, out)
    assert np.array_equal(out, np.r_[np.ones(128), 2.0 + np.arange(128, 256)].astype(np.float32))


@pytest.mark.parametrize("dec, inc", [("20", "232"), ("40", "236"), ("40", "264")])
def test_setmaxnreg_refuses_a_count_the_isa_does_not_allow(dec, inc):
    src = _SETMAXNREG.replace("DEC", dec).replace("INC", inc)
    with pytest.raises(EmulationError, match="24 to 256, a multiple of 8"):
        simtlab.emulate(simtlab.cuda_c(src, "roles"), 1, 256, np.zeros(256, np.float32))
