"""The PTX engine's tensor-core model against a GPU (run by the lead on an H100): the mma.sync
fragments the engine hands each lane, the wmma fragments it models (opaque in the ISA: the
mma layout repeated, FP16's registers 4-7 a copy of 0-3), and TF32's truncation of raw float
bits. Chapter 9's whole kernels are compared in tests/test_ptx_engine_gpu.py, within
``tensor_core_bound``."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_support import requires_gpu
from test_ptx_engine_gpu import _both, _run_on_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]


@pytest.mark.parametrize("precision", ["tf32", "f16", "bf16"])
def test_mma_fragment_registers_equal_the_gpus(precision):
    """The probe's registers after ldmatrix (A, B codes) and after mma.sync (D codes, small
    integers: exact on any tensor core) are the same bits on the engine and the GPU."""
    from simtlab.analysis.fragments import PROBE_SOURCE, probe_inputs

    a, b = probe_inputs(precision)
    out = (np.zeros(128, np.uint32), np.zeros(64, np.uint32), np.zeros(128, np.float32))
    cpu, gpu = _both(PROBE_SOURCE, f"mma_fragments_{precision}", 1, 32, a, b, *out)
    for i in (2, 3, 4):
        assert np.array_equal(cpu[i], gpu[i]), ("A", "B", "D")[i - 2]


WMMA_REGISTERS = r'''
typedef unsigned int u32;
#define OUT8(p, r) for (int i = 0; i < 8; ++i) p[threadIdx.x * 8 + i] = r[i];
extern "C" __global__ void wmma_regs_f16(const unsigned short* A, const unsigned short* B, u32* fa, u32* fb) {
    u32 a[8], b[8];
    asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;\n"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]), "=r"(a[4]), "=r"(a[5]), "=r"(a[6]), "=r"(a[7])
                 : "l"(A), "r"(16));
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;\n"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]), "=r"(b[4]), "=r"(b[5]), "=r"(b[6]), "=r"(b[7])
                 : "l"(B), "r"(16));
    OUT8(fa, a) OUT8(fb, b)
}
extern "C" __global__ void wmma_regs_bf16(const unsigned short* A, const unsigned short* B, u32* fa, u32* fb) {
    u32 a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.bf16 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "l"(A), "r"(16));
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.bf16 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]) : "l"(B), "r"(16));
    OUT8(fa, a) OUT8(fb, b)
}
extern "C" __global__ void wmma_regs_tf32(const float* A, const float* B, u32* fa, u32* fb) {
    u32 a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    asm volatile("wmma.load.a.sync.aligned.row.m16n16k8.tf32 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "l"(A), "r"(8));
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k8.tf32 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]) : "l"(B), "r"(16));
    OUT8(fa, a) OUT8(fb, b)
}
'''


@pytest.mark.parametrize("precision", ["tf32", "f16", "bf16"])
def test_wmma_fragment_registers_equal_the_gpus(precision):
    """The modelled wmma layout (tensor_ops.wmma_layout) against the registers a GPU loads:
    A and B hold codes (element (r, c) = r * columns + c), every register is written out."""
    from simtlab.kernels import tensor_cores as T

    k = 8 if precision == "tf32" else 16
    enc = {"tf32": "tf32", "f16": "fp16", "bf16": "bf16"}[precision]
    a = T.encode(np.arange(16 * k, dtype=np.float32).reshape(16, k), enc)
    b = T.encode(np.arange(k * 16, dtype=np.float32).reshape(k, 16), enc)
    cpu, gpu = _both(WMMA_REGISTERS, f"wmma_regs_{precision}", 1, 32, a, b,
                     np.zeros(256, np.uint32), np.zeros(256, np.uint32))
    assert np.array_equal(cpu[2], gpu[2]), "A"
    assert np.array_equal(cpu[3], gpu[3]), "B"


def test_mma_sync_truncates_raw_tf32_bits_on_the_gpu():
    """A = 1 + 3 * 2^-12 (past TF32's 10 mantissa bits), B = ones in row 0: v4 TF32 (raw bits to
    mma.sync) gives exactly 1.0 if the tensor core truncates, 1 + 2^-10 if it rounds; the
    engine truncates (tests/test_ptx_tensor_cores.py)."""
    from cuda_c_cases import BY_NAME

    case = BY_NAME["tensor_cores/tc_v4_mma_tf32"]
    a = np.full((128, 64), np.float32(1 + 3 * 2.0 ** -12), np.float32)
    b = np.zeros((64, 128), np.float32)
    b[0] = 1
    out = _run_on_gpu(case, (a, b))["out"]
    assert (out == np.float32(1.0)).all(), np.unique(out)[:4]
