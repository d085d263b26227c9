"""Which lane holds which element of A, B and C in a tensor-core ``mma.sync``: read from a
run on the PTX engine, not from the ISA's formulas.

``fragment_map(precision)`` runs :data:`PROBE_SOURCE` (one warp, CUDA C with inline PTX) on
the PTX engine, traced: A and B are staged in shared memory holding *codes* (element (r, c) of
A holds r * K + c, exact in every input precision), loaded into registers with ``ldmatrix`` as
chapter 9's kernels load them (A: ``.x4``; FP16/BF16 B: ``.x2.trans``; TF32 B: ``.x2`` of B
stored transposed), and every lane writes its registers out. The code in a register names the
element it holds. For C, a second ``mma.sync`` multiplies A' (column 0 all ones, column 1 the
row index) by B' (row 0 the column index, row 1 sixteen): D[r][c] = c + 16 r, so each
accumulator register holds the code of its own element. The returned map is what the engine
does; ``tests/test_ptx_tensor_cores.py`` checks it against the PTX ISA's layout formulas, and
``tests/test_ptx_tensor_cores_gpu.py`` runs the same probe on a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: the mma shape of each input precision, and its k
SHAPES = {"tf32": ("m16n8k8", 8), "f16": ("m16n8k16", 16), "bf16": ("m16n8k16", 16)}

PROBE_SOURCE = r"""
typedef unsigned int u32;
typedef unsigned short u16;

__device__ __forceinline__ u32 smem(const void* p) { return (u32)__cvta_generic_to_shared(p); }

// one warp: A (16 x K) and B (K x 8) into shared memory, fragments by ldmatrix, registers out
#define PROBE16(NAME, TYPE)                                                                          \
extern "C" __global__ void NAME(const u16* A, const u16* B, u32* fa, u32* fb, float* fd)             \
{                                                                                                     \
    __shared__ __align__(16) u16 sa[16 * 16];                                                        \
    __shared__ __align__(16) u16 sb[16 * 8];                                                         \
    const int lane = threadIdx.x;                                                                     \
    u32 a[4], b[2];                                                                                   \
    float d[4];                                                                                       \
    for (int pass = 0; pass < 2; ++pass) {       /* pass 0: the codes; pass 1: A' and B' */          \
        for (int e = lane; e < 256; e += 32) sa[e] = A[pass * 256 + e];                               \
        for (int e = lane; e < 128; e += 32) sb[e] = B[pass * 128 + e];                               \
        __syncwarp();                                                                                 \
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"            \
                     : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])                                 \
                     : "r"(smem(&sa[(lane & 15) * 16 + (lane >> 4) * 8])));                           \
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"              \
                     : "=r"(b[0]), "=r"(b[1]) : "r"(smem(&sb[(lane & 15) * 8])));                     \
        __syncwarp();                                                                                 \
        if (pass == 0) {                                                                              \
            for (int r = 0; r < 4; ++r) fa[lane * 4 + r] = a[r];                                      \
            for (int r = 0; r < 2; ++r) fb[lane * 2 + r] = b[r];                                      \
        }                                                                                             \
    }                                                                                                 \
    d[0] = d[1] = d[2] = d[3] = 0.f;                                                                  \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE ".f32 "                     \
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"                  \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                     \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));                 \
    for (int r = 0; r < 4; ++r) fd[lane * 4 + r] = d[r];                                              \
}

PROBE16(mma_fragments_f16, "f16")
PROBE16(mma_fragments_bf16, "bf16")

// TF32: A 16 x 8 floats (rows of two 16-byte chunks), B stored transposed (8 rows j of 8 k)
extern "C" __global__ void mma_fragments_tf32(const float* A, const float* B, u32* fa, u32* fb, float* fd)
{
    __shared__ __align__(16) float sa[16 * 8];
    __shared__ __align__(16) float sbt[8 * 8];
    const int lane = threadIdx.x;
    u32 a[4], b[2];
    float d[4];
    for (int pass = 0; pass < 2; ++pass) {
        for (int e = lane; e < 128; e += 32) sa[e] = A[pass * 128 + e];
        for (int e = lane; e < 64; e += 32) sbt[(e % 8) * 8 + e / 8] = B[pass * 64 + e];
        __syncwarp();
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                     : "r"(smem(&sa[(lane & 15) * 8 + (lane >> 4) * 4])));
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                     : "=r"(b[0]), "=r"(b[1]) : "r"(smem(&sbt[(lane & 7) * 8 + ((lane >> 3) & 1) * 4])));
        __syncwarp();
        if (pass == 0) {
            for (int r = 0; r < 4; ++r) fa[lane * 4 + r] = a[r];
            for (int r = 0; r < 2; ++r) fb[lane * 2 + r] = b[r];
        }
    }
    d[0] = d[1] = d[2] = d[3] = 0.f;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    for (int r = 0; r < 4; ++r) fd[lane * 4 + r] = d[r];
}
"""


@dataclass
class FragmentMap:
    """Per lane and fragment element, the ``(row, col)`` it holds: ``a`` (32, 4 or 8, 2),
    ``b`` (32, 2 or 4, 2), ``c`` (32, 4, 2); 16-bit elements two to a register, the low half
    first (element ``2 r`` and ``2 r + 1`` are register ``r``). ``run``: the traced probe."""

    precision: str
    shape: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    run: object = None

    def lane_of(self, matrix: str, row: int, col: int) -> list:
        """``[(lane, element)]`` holding ``(row, col)`` of ``matrix`` ("a", "b", "c")."""
        table = getattr(self, matrix)
        hit = (table[..., 0] == row) & (table[..., 1] == col)
        return [(int(lane), int(e)) for lane, e in zip(*np.nonzero(hit))]


def probe_inputs(precision: str) -> tuple:
    """``(A, B)`` of the probe: pass 0 the codes, pass 1 A' and B' (module docstring), encoded
    as the kernel reads them (float32 for TF32, 16-bit patterns for FP16 / BF16)."""
    from ..kernels import tensor_cores as T

    _, k = SHAPES[precision]
    rows, cols = np.mgrid[:16, :k]
    codes_a = rows * k + cols
    a_prime = np.where(cols == 0, 1, np.where(cols == 1, rows, 0))
    krow, ncol = np.mgrid[:k, :8]
    codes_b = krow * 8 + ncol
    b_prime = np.where(krow == 0, ncol, np.where(krow == 1, 16, 0))
    enc = {"tf32": "tf32", "f16": "fp16", "bf16": "bf16"}[precision]
    a = T.encode(np.stack([codes_a, a_prime]).astype(np.float32), enc).ravel()
    b = T.encode(np.stack([codes_b, b_prime]).astype(np.float32), enc).ravel()
    return a, b


def _register_values(bits: np.ndarray, precision: str) -> np.ndarray:
    """``(32, elements)`` values of the registers each lane wrote (``(32, registers)`` uint32)."""
    from ..kernels import tensor_cores as T

    if precision == "tf32":
        return bits.view(np.float32).astype(np.float64)
    halves = np.stack([bits & 0xFFFF, bits >> 16], axis=-1).reshape(32, -1).astype(np.uint16)
    return T.decode(halves, {"f16": "fp16", "bf16": "bf16"}[precision])


def _positions(codes: np.ndarray, cols: int) -> np.ndarray:
    codes = np.rint(codes).astype(np.int64)
    return np.stack([codes // cols, codes % cols], axis=-1)


def fragment_map(precision: str = "f16", *, trace: bool = True) -> FragmentMap:
    """Run the probe of ``precision`` ("tf32": m16n8k8; "f16", "bf16": m16n8k16) on the PTX
    engine and read which lane holds which element of A, B and C from its registers."""
    import simtlab

    if precision not in SHAPES:
        raise ValueError(f"precision must be one of {', '.join(SHAPES)}, not {precision!r}")
    shape, k = SHAPES[precision]
    kernel = probe_kernel(precision)
    a, b = probe_inputs(precision)
    na, nb = (4, 2)                                  # registers (TF32: one element each)
    fa = np.zeros(32 * na, np.uint32)
    fb = np.zeros(32 * nb, np.uint32)
    fd = np.zeros(32 * 4, np.float32)
    run = simtlab.emulate(kernel, 1, 32, a, b, fa, fb, fd, trace=trace)
    return FragmentMap(precision, shape,
                       a=_positions(_register_values(fa.reshape(32, na), precision), k),
                       b=_positions(_register_values(fb.reshape(32, nb), precision), 8),
                       c=_positions(fd.reshape(32, 4).astype(np.float64), 16),
                       run=run)


def probe_kernel(precision: str):
    """The probe of ``precision`` as a ``CudaCKernel`` (NVRTC; cached on disk)."""
    import simtlab

    return simtlab.cuda_c(PROBE_SOURCE, f"mma_fragments_{precision}")
