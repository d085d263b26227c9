"""Chapter 9: C = A @ B on the tensor cores (TF32, FP16, BF16 inputs; FP32 accumulate and output).

The kernels are CUDA C (``kernels/tensor_cores.cu``): numba-cuda has no tensor-core API. This
module holds what the CUDA C versions are checked and launched with:

- the CPU reference: :func:`gemm_reference` (the float64 product of the values the kernel reads),
  :func:`round_to` (what TF32 / FP16 / BF16 make of a float32), :func:`encode` / :func:`decode`
  (FP16 and BF16 travel as their 16-bit patterns in uint16 arrays: NumPy has no bfloat16);
- the error bound each precision allows, derived in :func:`tolerance`;
- the table of versions, :data:`VERSIONS` (kernel, precision, block tile, threads, shared memory,
  what the sizes must be multiples of), and :func:`launch_config`, which refuses sizes a version
  cannot take with a message that says why;
- the numba path (:func:`numba_mma_kernel`): a numba kernel that stages tiles in shared memory,
  builds each lane's fragments itself and calls one ``mma.sync`` written in CUDA C
  (``cuda.declare_device`` + ``link=``), the honest way to reach the tensor cores from numba.

``kernels/tensor_cores_smem.cu`` holds the shared-memory side the chapter traces on the CPU
(one ``ldmatrix`` phase's row addresses as plain 16-byte loads, a ``cp.async`` ring): CUDA C
only, as numba has no ``cp.async``; its launches live in ``simtlab.tensorcores``.

Napkin math: 2*M*N*K FLOPs (:func:`gemm_flops`); at least (M*K + K*N) * input bytes + 4*M*N
bytes of DRAM traffic (:func:`gemm_bytes`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CU_PATH = Path(__file__).with_suffix(".cu")

#: bits of mantissa each input precision keeps (FP32 has 23)
MANTISSA_BITS = {"fp32": 23, "tf32": 10, "fp16": 10, "bf16": 7}
#: bytes of one input element in memory (TF32 is stored as FP32: the kernel reads floats)
INPUT_BYTES = {"tf32": 4, "fp16": 2, "bf16": 2}
PRECISIONS = ("tf32", "fp16", "bf16")


# ------------------------------------------------------------------------------------------
# CPU reference
# ------------------------------------------------------------------------------------------
def _bf16_bits(x32: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns, rounded to nearest even (NaN stays NaN)."""
    bits = np.ascontiguousarray(x32, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(x32)
    out = rounded.astype(np.uint16)
    out[nan] = 0x7FC0
    return out


def encode(x, precision: str) -> np.ndarray:
    """The array a kernel of ``precision`` reads: float32 for TF32 (the tensor core drops the low
    bits itself), the 16-bit patterns (uint16) for FP16 and BF16, rounded to nearest even."""
    x32 = np.asarray(x, np.float32)
    if precision == "tf32":
        return x32.copy()
    if precision == "fp16":
        return x32.astype(np.float16).view(np.uint16)
    if precision == "bf16":
        return _bf16_bits(x32)
    raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")


def decode(x, precision: str) -> np.ndarray:
    """The values (float64) an encoded input stands for (for TF32: the float32 values given)."""
    x = np.asarray(x)
    if precision == "tf32":
        return x.astype(np.float64)
    if precision == "fp16":
        return x.view(np.float16).astype(np.float64)
    if precision == "bf16":
        return (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")


def round_to(x, precision: str, *, tf32: str = "nearest") -> np.ndarray:
    """What ``precision`` makes of float32 values, as float64: FP16 and BF16 round to nearest even;
    TF32 keeps 10 mantissa bits, rounded to nearest (``cvt.rna``, what WMMA's __float_to_tf32 does)
    or truncated (``tf32="truncate"``: mma.sync and wgmma read the top 19 bits of the register)."""
    x32 = np.asarray(x, np.float32)
    if precision != "tf32":
        return decode(encode(x32, precision), precision)
    bits = x32.view(np.uint32).astype(np.uint64)
    if tf32 == "nearest":
        bits = bits + 0x1000                       # half of the dropped 13 bits: ties away, as cvt.rna
    elif tf32 != "truncate":
        raise ValueError(f"tf32 must be 'nearest' or 'truncate', not {tf32!r}")
    kept = (bits & 0xFFFFE000).astype(np.uint32)
    return kept.view(np.float32).astype(np.float64)


def gemm_reference(a, b, precision: str) -> np.ndarray:
    """A @ B in float64 of the values the kernel reads (encoded inputs decoded): the only error
    left between this and a kernel's output is the tensor core's (and TF32's own rounding)."""
    return decode(a, precision) @ decode(b, precision)


def relative_error(c, want, a, b, precision: str) -> float:
    """max |c - want| / (|A| @ |B|), element by element: the error in units of the sum of the
    magnitudes that went into each output, the measure the bounds of :func:`tolerance` are in."""
    scale = np.abs(decode(a, precision)) @ np.abs(decode(b, precision))
    scale[scale == 0] = 1.0
    return float(np.max(np.abs(np.asarray(c, np.float64) - want) / scale))


#: relative rounding of a 16-bit output (torch.matmul's FP16 / BF16 C): half an ulp, 2^-11 and 2^-8
OUTPUT_ROUNDING = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8}


def tolerance(precision: str, k: int, output: str | None = None) -> float:
    """The largest relative error (:func:`relative_error`, against :func:`gemm_reference`) a
    correct kernel can make, for a sum over ``k`` products.

    Each output is sum_k a_k b_k. The products are exact on the tensor cores (an 11-bit by 11-bit
    mantissa product fits FP32's 24 bits). What can go wrong:

    - input rounding (TF32 only: FP16 and BF16 inputs are already exact in memory): each factor
      loses up to 2^-10 of itself when truncated to TF32's 10 mantissa bits (2^-11 when rounded),
      so a product up to 2 * 2^-10 (+ 2^-20): 2^-9 + 2^-20 relative to sum |a||b|;
    - accumulation in FP32: each of the k additions into the running sum loses less than one
      ulp of a number no larger than sum |a||b| (2^-23 relative: the tensor core's adder
      truncates instead of rounding, so a whole ulp, not half); k additions: k * 2^-23.

    The bound is the worst case; random inputs land near sqrt(k) * 2^-24 for the sum. A wrong
    fragment layout gives errors of order 1, and a skipped k-tile of BK elements BK/k of the
    sum (with positive inputs), above this bound for k up to 4096 and BK = 32.

    ``output``: the precision C is stored in when it is not FP32 (torch.matmul of FP16 / BF16
    writes FP16 / BF16): rounding the result to nearest adds half an ulp of |c| <= sum |a||b|,
    2^-11 (FP16) or 2^-8 (BF16) relative, on top of the FP32 accumulation.
    """
    if precision not in MANTISSA_BITS:
        raise ValueError(f"precision must be one of fp32, {', '.join(PRECISIONS)}, not {precision!r}")
    inputs = 2.0 ** -9 + 2.0 ** -20 if precision == "tf32" else 0.0      # fp32 (SGEMM): exact inputs
    if output is not None and output not in OUTPUT_ROUNDING:
        raise ValueError(f"a 16-bit output is fp16 or bf16, not {output!r}")
    return inputs + k * 2.0 ** -23 + (OUTPUT_ROUNDING[output] if output else 0.0)


def source_tolerance(precision: str, k: int) -> float:
    """The same bound against the float64 product of the float32 values *before* they were
    rounded to ``precision``: each factor loses up to 2^-(mantissa bits + 1) when rounded to
    nearest (TF32: truncated, 2^-10), twice that per product, plus the accumulation."""
    if precision == "fp32":
        return tolerance("fp32", k)
    u = 2.0 ** -MANTISSA_BITS[precision] if precision == "tf32" else 2.0 ** -(MANTISSA_BITS[precision] + 1)
    return 2 * u + u * u + k * 2.0 ** -23


def gemm_flops(m: int, n: int, k: int) -> int:
    return 2 * m * n * k


def gemm_bytes(m: int, n: int, k: int, precision: str) -> int:
    return (m * k + k * n) * INPUT_BYTES[precision] + 4 * m * n


def inputs(m: int, n: int, k: int, precision: str, seed: int = 0, *, positive: bool = False):
    """``(a_fp32, b_fp32, a, b)``: random float32 sources and the encoded arrays a kernel reads.
    ``positive``: values in [0.5, 1.5) (a skipped tile shows in the error), else in [-1, 1)."""
    rng = np.random.default_rng(seed)
    lo, hi = (0.5, 1.5) if positive else (-1.0, 1.0)
    a32 = rng.uniform(lo, hi, (m, k)).astype(np.float32)
    b32 = rng.uniform(lo, hi, (k, n)).astype(np.float32)
    return a32, b32, encode(a32, precision), encode(b32, precision)


# ------------------------------------------------------------------------------------------
# The versions (kernels/tensor_cores.cu) and their launches
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TcVersion:
    label: str                     # "v6 cp.async pipeline"
    precision: str                 # tf32, fp16, bf16
    kernel: str                    # extern "C" name in tensor_cores.cu
    tile: tuple                    # (BM, BN) of one block; v1/v2: (16, 16 * warps)
    multiple: tuple                # M, N, K must be multiples of these
    threads: int
    dynamic_smem: int = 0          # bytes
    sm90a: bool = False            # wgmma: needs a CUBIN for sm_90a
    note: str = ""
    b_transposed: bool = False     # the kernel reads B^T (N x K row-major), not B
    tma: bool = False              # A and B reach the kernel as CUtensorMaps (v8, v6w), not pointers
    tma_boxes: tuple = ()          # their boxes (columns, rows) of A and of B (B^T); () for v8's V8_BOXES
    isolate: bool = False          # checked and timed in a child process (a fault or trap there ends only it)
    persistent: bool = False       # one block per SM walks the tiles (launch_config's sms); 1-D grid of tiles otherwise
    stages: int = 0                # the shared ring's depth (v6, v6t, v6w); 0: see stages_of
    stream_k: bool = False         # persistent, the last wave split by k-tiles: takes stream_k_buffers too
    tma_rounds: bool = False       # its tensor maps say TF32: the TMA rounds A and B^T to nearest TF32 (v6w _rn)

    @property
    def name(self) -> str:
        return f"{self.label} {self.precision.upper()}"


def _tile_bytes(bm, bn, bk, precision, stages):
    return stages * (bm * bk + bk * bn) * INPUT_BYTES[precision]


#: block tiles of the mma.sync versions, as in tensor_cores.cu (TF32_TILE, H16_TILE): BM, BN, BK
MMA_TILE = {"tf32": (128, 128, 32), "fp16": (128, 256, 32), "bf16": (128, 256, 32)}
V3_TILE = (128, 128, 32)
V7_TILE = (128, 256, 64)
V7_STAGES = 4
#: v7 TF32 (tensor_cores.cu V7T_*: C^T = B^T A^T, BM is wgmma's N) and v7 TF32 with B^T given (V7B_*)
V7T_TILE = (256, 128, 32)
V7B_TILE = (128, 256, 32)
#: v8: v7's tile, 4 stages, 2 consumer warpgroups + 1 producer warp
V8_THREADS = 288
#: v8's TMA boxes (columns, rows), 128-byte swizzle: 64 k x 128 rows of A, 64 n x 64 k of B
#: (128-byte rows of 16-bit elements: v7's shared layout)
V8_BOXES = ((V7_TILE[2], V7_TILE[0]), (64, V7_TILE[2]))
V8_SWIZZLE = 128
#: kernels of tensor_cores.cu that are not GEMM versions: tc_transpose_f32 makes the B^T that
#: tc_v7_wgmma_tf32_bt reads (the benchmark times a row with it)
HELPER_KERNELS = ("tc_transpose_f32",)


_PRECISION_OF = {"Tf32": "tf32", "F16": "fp16", "Bf16": "bf16"}
_V6_LINE = re.compile(r"^V6_KERNEL\((tc_\w+), (\w+), \w+, (\d+), (\d+), (\d+), (\d+), (\d+), (\d+), (\d+), (\d+), "
                      r"(true|false)\)\s*(?://\s*(.*))?$", re.M)
#: v6t (TF32 with B^T in shared memory, every fragment by ldmatrix): name, BM, BN, BK, WM, WN, STAGES,
#: MINB, GROUP, how B reaches its transposed tile, ROUND (cvt.rna inputs), B_LATE
_V6T_LINE = re.compile(r"^V6T_KERNEL\((tc_\w+), (\d+), (\d+), (\d+), (\d+), (\d+), (\d+), (\d+), (\d+), "
                       r"(B_CP4|B_REGS|B_GIVEN_T), (true|false), (true|false)\)\s*(?://\s*(.*))?$", re.M)
#: v6w (TF32 mma.sync fed by the TMA, mbarriers instead of __syncthreads; B^T given, 64 x 64
#: warps, BK 32): name, BM, BN, STAGES, GROUP, B_LATE, PERSISTENT, LAST_ISSUES (the last warp done with a
#: slot refills it), CLUSTER (blocks sharing B^T's tile by TMA multicast)
_V6W_LINE = re.compile(r"^V6W_KERNEL\((tc_\w+), (\d+), (\d+), (\d+), (\d+), (true|false), (true|false), (true|false), (\d)\)"
                       r"\s*(?://\s*(.*))?$", re.M)
#: v6w with a producer warpgroup: name, BM, BN, STAGES, GROUP, PERSISTENT, STAGED_C (C through 8-row strips of
#: shared memory past the ring, one a consumer warp), CLUSTER (blocks sharing B^T's tile by TMA multicast),
#: EARLY_RELEASE (a slot released once its last fragments are loaded), MMA_FIRST (a k-tile's last MMAs before the
#: wait for the next one when it has not landed), SNAKE (odd rounds walk K backwards and odd groups of tile rows their
#: columns right to left, so a round starts on what the round before read last); V6W_PRODUCER_KERNEL_TMA_RN lines are
#: the same kernels whose tensor maps say TF32 (TcVersion.tma_rounds)
_V6W_PRODUCER_LINE = re.compile(r"^V6W_PRODUCER_KERNEL(?:_TMA_RN)?\((tc_\w+), (\d+), (\d+), (\d+), (\d+), (true|false), (true|false), "
                                r"(\d), (true|false), (true|false), (true|false)\)"
                                r"\s*(?://\s*(.*))?$", re.M)
#: STAGED_C's strips: 8 rows of 64 + 8 floats a consumer warp
V6W_STRIP_BYTES = 8 * (64 + 8) * 4
_V6W_STREAM_K_LINE = re.compile(r"^V6W_STREAM_K_KERNEL\((tc_\w+), (\d+), (\d+), (\d+), (\d+), (true|false)\)\s*(?://\s*(.*))?$",
                                re.M)
V6W_BK = 32
#: tensor_cores.cu's BCopy names -> V6Config.b_copy
_B_COPY = {"B_CP4": "cp.async 4 B", "B_REGS": "registers", "B_GIVEN_T": "B^T given"}


@dataclass(frozen=True)
class V6Config:
    """One instantiation of tensor_cores.cu's MmaPipeline template (a ``V6_KERNEL(...)`` line)."""
    kernel: str
    precision: str
    bm: int
    bn: int
    bk: int
    wm: int
    wn: int
    stages: int
    min_blocks: int                # __launch_bounds__' second argument
    group: int                     # block rows walked before moving right
    epilogue_smem: bool            # C through shared memory, 16-byte stores
    reason: str = ""
    #: v6t only: how B reaches shared memory transposed (a _B_COPY value; "" for v6's row-major B),
    #: inputs rounded to nearest (cvt.rna) as cuBLAS does, B's fragments loaded after the MMAs
    b_copy: str = ""
    round_inputs: bool = False
    b_late: bool = False

    @property
    def sweep(self) -> bool:
        return self.kernel.startswith(("tc_v6s_", "tc_v6t_"))

    @property
    def b_transposed_smem(self) -> bool:
        """v6t: B^T (n-major) in shared memory, B's fragments by ldmatrix."""
        return bool(self.b_copy)

    @property
    def threads(self) -> int:
        return (self.bm // self.wm) * (self.bn // self.wn) * 32

    @property
    def smem(self) -> int:
        ring = _tile_bytes(self.bm, self.bn, self.bk, self.precision, self.stages)
        staged_c = (self.threads // 32) * 16 * (self.wn + 8) * 4 if self.epilogue_smem else 0
        return max(ring, staged_c)

    @property
    def describe(self) -> str:
        return (f"{self.bm}x{self.bn}x{self.bk}, warps {self.wm}x{self.wn} ({self.threads // 32}), {self.stages} stages, "
                f"min {self.min_blocks} block{'s' if self.min_blocks > 1 else ''}/SM, group {self.group}"
                + (", C via smem" if self.epilogue_smem else "")
                + (f", B^T in smem by {self.b_copy}" if self.b_copy else "")
                + (", inputs rounded (cvt.rna)" if self.round_inputs else "")
                + (", B fragments late" if self.b_late else ""))

    @property
    def version(self) -> "TcVersion":
        if self.b_copy:
            label = "v6t sweep " + self.kernel[len("tc_v6t_"):]
        else:
            label = "v6 sweep " + self.kernel[len("tc_v6s_"):] if self.sweep else "v6 + cp.async pipeline"
        if self.kernel.endswith("stages"):
            label += f", {self.stages} stages"
        note = self.describe + (f": {self.reason}" if self.reason else "")
        return TcVersion(label, self.precision, self.kernel, (self.bm, self.bn), (self.bm, self.bn, self.bk),
                         self.threads, self.smem, note=note, b_transposed=self.b_copy == _B_COPY["B_GIVEN_T"],
                         stages=self.stages,
                         isolate=bool(self.b_copy))          # v6t: first GPU runs in a child process each


def _v6_configs(source: str | None = None) -> tuple:
    text = CU_PATH.read_text() if source is None else source
    out = []
    for m in _V6_LINE.finditer(text):
        name, prec = m.group(1), _PRECISION_OF[m.group(2)]
        bm, bn, bk, wm, wn, stages, minb, group = (int(m.group(i)) for i in range(3, 11))
        out.append(V6Config(name, prec, bm, bn, bk, wm, wn, stages, minb, group, m.group(11) == "true",
                            (m.group(12) or "").strip()))
    return tuple(out)


def _v6t_configs(source: str | None = None) -> tuple:
    text = CU_PATH.read_text() if source is None else source
    out = []
    for m in _V6T_LINE.finditer(text):
        bm, bn, bk, wm, wn, stages, minb, group = (int(m.group(i)) for i in range(2, 10))
        out.append(V6Config(m.group(1), "tf32", bm, bn, bk, wm, wn, stages, minb, group, False,
                            (m.group(13) or "").strip(), b_copy=_B_COPY[m.group(10)],
                            round_inputs=m.group(11) == "true", b_late=m.group(12) == "true"))
    return tuple(out)


def cluster_shape(bm: int, bn: int, cluster: int) -> tuple:
    """(CM, CN): a cluster's blocks hold CM tiles one above the other (sharing B^T's tile) by CN side by side
    (sharing A's). A cluster of 2 shares the larger tile, as tensor_cores.cu's MmaTf32Tma does (SHARE_A)."""
    cm = 2 if cluster == 2 and bn >= bm else 1
    return cm, cluster // cm


def _v6w_version(name: str, bm: int, bn: int, stages: int, group: int, features: str, comment: str | None, *,
                 cluster: int = 1, persistent: bool = False, stream_k: bool = False, producer: bool = False,
                 staged_c: bool = False, tma_rounds: bool = False) -> TcVersion:
    """One v6w line as a sweep version: TF32, B^T given, 64 x 64 warps, BK 32, tensor maps of A and
    B^T (a cluster's blocks hold :func:`cluster_shape` tiles, M and N covering whole clusters, and each copies its
    share of the tiles it shares; ``producer``: a warpgroup of 128 more threads asks the TMA for them;
    ``staged_c``: C's strips past the ring; ``tma_rounds``: the maps say TF32, so the TMA rounds the inputs to nearest
    TF32 on their way into shared memory); ``features`` goes into its note after the common part."""
    warps = bm * bn // 4096
    note = (f"{bm}x{bn}x{V6W_BK}, warps 64x64 ({warps}), {stages} stages, group {group}, TMA + mbarriers, "
            f"B^T given{features}" + (f": {comment.strip()}" if comment else ""))
    cm, cn = cluster_shape(bm, bn, cluster)
    return TcVersion("v6w sweep " + name[len("tc_v6w_tf32_"):], "tf32", name, (bm, bn), (bm * cm, bn * cn, V6W_BK),
                     warps * 32 + (128 if producer else 0),
                     _tile_bytes(bm, bn, V6W_BK, "tf32", stages) + (warps * V6W_STRIP_BYTES if staged_c else 0) + 1024, sm90a=True,
                     note=note, b_transposed=True, tma=True,
                     tma_boxes=((V6W_BK, bm // cn), (V6W_BK, bn // cm)),
                     isolate=True, persistent=persistent, stages=stages, stream_k=stream_k, tma_rounds=tma_rounds)


def _cluster_feature(bm: int, bn: int, cluster: int) -> str:
    cm, cn = cluster_shape(bm, bn, cluster)
    shared = " and ".join(x for x, n in (("A's", cn), ("B^T's", cm)) if n > 1)
    return f", clusters of {cluster} share {shared} tile" if cluster != 1 else ""


def _v6w_versions(source: str | None = None) -> tuple:
    """Every V6W_KERNEL, V6W_PRODUCER_KERNEL and V6W_STREAM_K_KERNEL line as a sweep version (sm_90a)."""
    text = CU_PATH.read_text() if source is None else source
    out = []
    for m in _V6W_LINE.finditer(text):
        bm, bn, stages, group, cluster = (int(m.group(i)) for i in (2, 3, 4, 5, 9))
        late, persistent, last = (m.group(i) == "true" for i in (6, 7, 8))
        features = ((", B fragments late" if late else "") + (", persistent" if persistent else "")
                    + (", last warp refills" if last else "")
                    + _cluster_feature(bm, bn, cluster))
        out.append(_v6w_version(m.group(1), bm, bn, stages, group, features, m.group(10), cluster=cluster,
                                persistent=persistent))
    for m in _V6W_PRODUCER_LINE.finditer(text):
        bm, bn, stages, group = (int(m.group(i)) for i in range(2, 6))
        persistent, staged_c, cluster = m.group(6) == "true", m.group(7) == "true", int(m.group(8))
        features = (", a producer warpgroup" + (", persistent" if persistent else "")
                    + (", C through shared memory" if staged_c else "")
                    + _cluster_feature(bm, bn, cluster))
        features += ", each slot released once its last fragments are loaded" if m.group(9) == "true" else ""
        features += ", the last MMAs before the wait for a late k-tile" if m.group(10) == "true" else ""
        features += ", odd rounds backwards in K, odd groups right to left" if m.group(11) == "true" else ""
        rounds = m.group(0).startswith("V6W_PRODUCER_KERNEL_TMA_RN")
        features += ", TF32 tensor maps: the TMA rounds the inputs to nearest TF32" if rounds else ""
        out.append(_v6w_version(m.group(1), bm, bn, stages, group, features, m.group(12), persistent=persistent,
                                producer=True, staged_c=staged_c, cluster=cluster, tma_rounds=rounds))
    for m in _V6W_STREAM_K_LINE.finditer(text):
        bm, bn, stages, group = (int(m.group(i)) for i in range(2, 6))
        features = ", persistent, stream-K tail" + (", each share in order" if m.group(6) == "true" else "")
        out.append(_v6w_version(m.group(1), bm, bn, stages, group, features, m.group(7), persistent=True, stream_k=True))
    return tuple(out)


def stream_k_buffers(version: "TcVersion", m: int, n: int, blocks: int) -> tuple:
    """Sizes of a stream-K version's two extra arguments for ``blocks`` blocks: the workspace of
    partial sums (float32: two tiles a block, its first and last tile of the tail) and the
    counters (int32, one a tile, zero before the first launch; the kernel leaves them zero)."""
    bm, bn = version.tile
    return 2 * blocks * bm * bn, (m // bm) * (n // bn)


def stages_of(version: "TcVersion") -> int:
    """The shared ring's depth of a pipelined version (v7, v8: V7_STAGES; 1 for the unpipelined ones)."""
    return version.stages or (V7_STAGES if version.sm90a else 1)


#: every V6_KERNEL line of tensor_cores.cu: the chapter's v6 rows and the sweep's candidates
V6_CONFIGS = _v6_configs()
#: every V6T_KERNEL line: TF32 with B^T in shared memory (all sweep candidates)
V6T_CONFIGS = _v6t_configs()


def _versions() -> tuple:
    suffix = {"tf32": "tf32", "fp16": "f16", "bf16": "bf16"}
    out = [TcVersion("v1 WMMA naive", "tf32", "tc_v1_wmma_tf32", (16, 64), (16, 16, 8), 128)]
    for p in ("fp16", "bf16"):
        out.append(TcVersion("v2 WMMA naive", p, f"tc_v2_wmma_{suffix[p]}", (16, 64), (16, 16, 16), 128))
    for p in PRECISIONS:
        out.append(TcVersion("v3 WMMA tiled", p, f"tc_v3_wmma_tiled_{suffix[p]}", V3_TILE[:2], V3_TILE, 256))
    for label, kernel in (("v4 mma.sync + ldmatrix", "tc_v4_mma"), ("v5 + swizzle", "tc_v5_mma_swizzle")):
        for p in PRECISIONS:
            bm, bn, bk = MMA_TILE[p]
            out.append(TcVersion(label, p, f"{kernel}_{suffix[p]}", (bm, bn), (bm, bn, bk), 256,
                                 _tile_bytes(bm, bn, bk, p, 1), note="1 stage"))
    out.extend(c.version for c in V6_CONFIGS if not c.sweep)
    for p in ("fp16", "bf16"):
        bm, bn, bk = V7_TILE
        out.append(TcVersion("v7 wgmma", p, f"tc_v7_wgmma_{suffix[p]}", (bm, bn), V7_TILE, 256,
                             _tile_bytes(bm, bn, bk, p, V7_STAGES) + 1024, sm90a=True,
                             note="cp.async + wgmma, 4 stages (1 KB extra: tiles aligned to 1024 bytes)"))
    # TF32 wgmma needs both operands K-major: B's fragments from registers (C^T = B^T A^T), or B^T given
    bm, bn, bk = V7T_TILE
    out.append(TcVersion("v7 wgmma", "tf32", "tc_v7_wgmma_tf32", (bm, bn), V7T_TILE, 256,
                         _tile_bytes(bm, bn, bk, "tf32", V7_STAGES) + 1024, sm90a=True, isolate=True,
                         note="cp.async + wgmma m64n256k8 TF32, 4 stages; C^T = B^T A^T: B^T's fragments from "
                              "registers (32-bit shared loads of the row-major B tile), A's tile read by descriptor"))
    bm, bn, bk = V7B_TILE
    out.append(TcVersion("v7 wgmma, B^T given", "tf32", "tc_v7_wgmma_tf32_bt", (bm, bn), V7B_TILE, 256,
                         _tile_bytes(bm, bn, bk, "tf32", V7_STAGES) + 1024, sm90a=True, isolate=True, b_transposed=True,
                         note="cp.async + wgmma m64n256k8 TF32, 4 stages; the caller passes B^T (N x K): both "
                              "operands K-major by descriptor; timed without (this row) and with tc_transpose_f32"))
    for p in ("fp16", "bf16"):
        bm, bn, bk = V7_TILE
        out.append(TcVersion("v8 wgmma + TMA", p, f"tc_v8_tma_wgmma_{suffix[p]}", (bm, bn), V7_TILE, V8_THREADS,
                             _tile_bytes(bm, bn, bk, p, V7_STAGES) + 1024, sm90a=True, tma=True, isolate=True,
                             note="TMA (cp.async.bulk.tensor, 128-byte swizzle) + mbarriers, 1 producer warp, "
                                  "2 consumer warpgroups, wgmma m64n256k16, 4 stages"))
    return tuple(out)


VERSIONS = _versions()
#: the v6 sweep (tc_v6s_*): timed by the benchmark, which reports the best per precision
SWEEP_CONFIGS = tuple(c for c in V6_CONFIGS if c.sweep) + V6T_CONFIGS
SWEEP = tuple(c.version for c in SWEEP_CONFIGS) + _v6w_versions()


def find(label_or_kernel: str, precision: str | None = None) -> TcVersion:
    for v in VERSIONS + SWEEP:
        if v.kernel == label_or_kernel or (v.label == label_or_kernel and v.precision == precision) \
                or v.name == label_or_kernel:
            return v
    raise KeyError(f"no tensor-core version {label_or_kernel!r}"
                   + (f" in {precision}" if precision else "") + f"; known: {', '.join(v.name for v in VERSIONS)}")


def legal_shape(version: TcVersion, shape) -> tuple:
    """``shape`` (M, N, K) with each size rounded up to what ``version`` needs: a check shape that
    every version can take (K = 96 becomes 128 for a BK of 64, M = 384 stays 384 for BM = 128)."""
    return tuple(-(-size // mult) * mult for size, mult in zip(shape, version.multiple))


#: SMs of the H100 SXM: a persistent version's grid when the caller does not pass the device's count
H100_SMS = 132


def launch_config(version: TcVersion, m: int, n: int, k: int, sms: int = H100_SMS) -> tuple:
    """``(grid, block, dynamic shared bytes)`` of ``version`` for an M x K times K x N product;
    ValueError, naming the requirement, when the sizes are not multiples of what it needs. A
    persistent version gets ``min(tiles, sms)`` blocks (one per SM), a stream-K one ``sms`` (fewer only
    when there are fewer k-tiles in all); v6w's others one per tile."""
    mm, nm, km = version.multiple
    bad = [f"{name} = {val} is not a multiple of {mult}"
           for name, val, mult in (("M", m, mm), ("N", n, nm), ("K", k, km)) if val % mult or val <= 0]
    if bad:
        raise ValueError(f"{version.name} ({version.kernel}) needs M, N, K multiples of {mm}, {nm}, {km} "
                         f"(its tiles are not bounds-checked): " + "; ".join(bad))
    bm, bn = version.tile
    if version.kernel.startswith(("tc_v1", "tc_v2")):
        grid = (-(-(n // 16) // 4), m // 16)            # 4 warps a block, one 16 x 16 tile each
    elif version.kernel.startswith("tc_v6w"):           # 1-D: tile ids, grouped in the kernel
        tiles = (m // bm) * (n // bn)
        if version.stream_k:                            # every SM, while each gets a k-tile of its own
            grid = (min(sms, tiles * (k // version.multiple[2])),)
        else:
            # persistent: one block an SM, whole clusters of them (a cluster's blocks walk tile pairs together)
            cluster = version.multiple[0] // bm * (version.multiple[1] // bn)
            grid = (max(cluster, min(tiles, sms) // cluster * cluster) if version.persistent else tiles,)
    else:
        grid = (n // bn, m // bm)
    return grid, (version.threads,), version.dynamic_smem


# ------------------------------------------------------------------------------------------
# numba: the honest way to the tensor cores from Python (a CUDA C device function, linked)
# ------------------------------------------------------------------------------------------
NUMBA_BM, NUMBA_BN, NUMBA_BK = 64, 64, 16        # block tile; 4 warps of 32 x 32 (2 x 4 mma tiles)
NUMBA_THREADS = 128
NUMBA_MULTIPLE = (NUMBA_BM, NUMBA_BN, NUMBA_BK)


def numba_device_source() -> str:
    """The section of tensor_cores.cu that numba links: one mma.sync per call, nothing else."""
    text = CU_PATH.read_text()
    start = text.index("// one m16n8k16 (FP16 / BF16)")
    end = text.index("// ==================================== end numba")
    return "typedef unsigned int u32;\n" + text[start:end]


@functools.lru_cache(maxsize=None)
def numba_mma_kernel(precision: str):
    """A numba kernel ``kernel(a, b, c)`` (uint16 patterns in, float32 out) whose inner product is
    ``tc_mma_<precision>_m16n8k16`` from tensor_cores.cu, linked with ``cuda.declare_device``.

    Each block stages a 64 x 16 tile of A and a 16 x 64 tile of B in shared memory; each lane of a
    warp gathers its fragment elements by the layout written above the CUDA C function (lane l
    holds A[l/4][2(l%4)], ...), packs two 16-bit values per 32-bit register and calls the MMA."""
    from numba import cuda, types, uint16, uint32, float32

    if precision not in ("fp16", "bf16"):
        raise ValueError("the numba path links the FP16 and BF16 mma.sync (m16n8k16)")
    name = f"tc_mma_{'f16' if precision == 'fp16' else 'bf16'}_m16n8k16"
    try:
        code = cuda.CUSource(numba_device_source())
    except AttributeError:                                  # an older numba-cuda: a file on disk
        import tempfile

        path = Path(tempfile.gettempdir()) / "simtlab_tc_mma.cu"
        path.write_text(numba_device_source())
        code = str(path)
    sig = types.UniTuple(types.float32, 4)(*([types.uint32] * 6 + [types.float32] * 4))
    mma = cuda.declare_device(name, sig, link=[code])
    BM, BN, BK = NUMBA_BM, NUMBA_BN, NUMBA_BK

    @cuda.jit(device=True, inline=True)
    def pack(lo, hi):
        return uint32(lo) | (uint32(hi) << uint32(16))

    @cuda.jit
    def kernel(a, b, c):
        sa = cuda.shared.array((BM, BK), uint16)
        sb = cuda.shared.array((BK, BN), uint16)
        acc = cuda.local.array((2, 4, 4), float32)
        t = cuda.threadIdx.x
        warp, lane = t // 32, t % 32
        g, q = lane // 4, lane % 4                          # groupID and thread-in-group of the layout
        wm, wn = warp // 2, warp % 2                        # 2 x 2 warps of 32 x 32 outputs
        m0, n0 = cuda.blockIdx.y * BM, cuda.blockIdx.x * BN
        kk = a.shape[1]
        for i in range(2):
            for j in range(4):
                for e in range(4):
                    acc[i, j, e] = float32(0.0)
        for k0 in range(0, kk, BK):
            for e in range(t, BM * BK, NUMBA_THREADS):      # 8 elements of each tile per thread
                sa[e // BK, e % BK] = a[m0 + e // BK, k0 + e % BK]
                sb[e // BN, e % BN] = b[k0 + e // BN, n0 + e % BN]
            cuda.syncthreads()
            for j in range(4):
                col = wn * 32 + j * 8 + g
                b0 = pack(sb[2 * q, col], sb[2 * q + 1, col])
                b1 = pack(sb[2 * q + 8, col], sb[2 * q + 9, col])
                for i in range(2):
                    row = wm * 32 + i * 16 + g
                    a0 = pack(sa[row, 2 * q], sa[row, 2 * q + 1])
                    a1 = pack(sa[row + 8, 2 * q], sa[row + 8, 2 * q + 1])
                    a2 = pack(sa[row, 2 * q + 8], sa[row, 2 * q + 9])
                    a3 = pack(sa[row + 8, 2 * q + 8], sa[row + 8, 2 * q + 9])
                    d = mma(a0, a1, a2, a3, b0, b1, acc[i, j, 0], acc[i, j, 1], acc[i, j, 2], acc[i, j, 3])
                    for e in range(4):
                        acc[i, j, e] = d[e]
            cuda.syncthreads()
        for i in range(2):
            for j in range(4):
                row = m0 + wm * 32 + i * 16 + g
                col = n0 + wn * 32 + j * 8 + 2 * q
                c[row, col] = acc[i, j, 0]
                c[row, col + 1] = acc[i, j, 1]
                c[row + 8, col] = acc[i, j, 2]
                c[row + 8, col + 1] = acc[i, j, 3]

    return kernel


def numba_launch_config(m: int, n: int, k: int) -> tuple:
    """``(grid, block)`` of :func:`numba_mma_kernel`; ValueError unless M, N are multiples of 64, K of 16."""
    bad = [f"{name} = {val} is not a multiple of {mult}"
           for name, val, mult in (("M", m, NUMBA_BM), ("N", n, NUMBA_BN), ("K", k, NUMBA_BK)) if val % mult or val <= 0]
    if bad:
        raise ValueError("the numba tensor-core kernel needs M, N multiples of 64 and K of 16: " + "; ".join(bad))
    return (n // NUMBA_BN, m // NUMBA_BM), NUMBA_THREADS


def exported_kernels(source: str | None = None) -> list[str]:
    """The ``extern "C" __global__`` names of tensor_cores.cu (macro-made ones included)."""
    text = CU_PATH.read_text() if source is None else source
    direct = re.findall(r'extern "C" __global__ void\s+(?:__launch_bounds__\([^)]*\)\s*)?(tc_\w+)\s*\(', text)
    macro = re.findall(r"^(?:MMA_KERNEL|V6_KERNEL|V6T_KERNEL|V6W_KERNEL|V6W_PRODUCER_KERNEL(?:_TMA_RN)?|V6W_STREAM_K_KERNEL)\((tc_\w+),",
                       text, flags=re.M)
    return direct + macro


# ------------------------------------------------------------------------------------------
# the v6 shared layout on the CPU: the byte offsets MmaPipeline computes, written as in the .cu
# ------------------------------------------------------------------------------------------
def swizzle_a(row: int, chunk: int, row_chunks: int) -> int:
    """tensor_cores.cu swizzle_a: A's 16-byte chunk ``chunk`` of ``row`` (rows of ``row_chunks`` chunks)."""
    return chunk ^ (row & 7) if row_chunks >= 8 else chunk ^ ((row >> 1) & 3)


def swizzle_b(row: int, chunk: int, tf32: bool) -> int:
    """tensor_cores.cu swizzle_b: B's chunk of k-row ``row`` (TF32: XOR 2 (k & 3), 16-bit: XOR k & 7)."""
    return chunk ^ ((row & 3) << 1) if tf32 else chunk ^ (row & 7)


def _epc(precision: str) -> int:
    return 16 // INPUT_BYTES[precision]


def copy_offsets(cfg: V6Config, thread: int) -> dict:
    """MmaPipeline::copier / copy_tile: for one thread, ``{"a": [(row, chunk, byte offset)], "b": [...]}``,
    the global chunk each cp.async reads and where in the stage's A / B tile it writes."""
    epc = _epc(cfg.precision)
    a_chunks, b_chunks = cfg.bk // epc, cfg.bn // epc
    tf32 = cfg.precision == "tf32"
    a_rows, b_rows = cfg.threads // a_chunks, cfg.threads // b_chunks
    ar, ac, br, bc = thread // a_chunks, thread % a_chunks, thread // b_chunks, thread % b_chunks
    a_off = (ar * a_chunks + swizzle_a(ar, ac, a_chunks)) * 16
    b_off = (br * b_chunks + swizzle_b(br, bc, tf32)) * 16
    return {"a": [(ar + p * a_rows, ac, a_off + p * a_rows * a_chunks * 16) for p in range(cfg.bm // a_rows)],
            "b": [(br + p * b_rows, bc, b_off + p * b_rows * b_chunks * 16) for p in range(cfg.bk // b_rows)]}


def fragment_offsets(cfg: V6Config, lane: int, wm: int, wn: int) -> dict:
    """MmaPipeline::fragment_offsets + load_frags: the byte offset (in the stage's A or B tile) each
    ldmatrix / ld.shared of the lane reads, by the XOR-and-add algebra of the .cu:
    ``{("a", kk, i): off, ("b", kk, j): off}`` (16-bit B: one ldmatrix.x4.trans per pair of n8
    tiles, j = pair; TF32 B: the first of the two 32-bit loads of n8 tile j, the second is 4 rows on)."""
    epc = _epc(cfg.precision)
    a_chunks, b_chunks = cfg.bk // epc, cfg.bn // epc
    tf32 = cfg.precision == "tf32"
    mma_k = 8 if tf32 else 16
    mt, nt = cfg.wm // 16, cfg.wn // 8
    row = wm * cfg.wm + (lane & 15)
    oa = (row * a_chunks + swizzle_a(row, lane >> 4, a_chunks)) * 16
    if not tf32:
        mat = lane >> 3
        k, n = (mat & 1) * 8 + (lane & 7), wn * cfg.wn + (mat >> 1) * 8
        ob = (k * b_chunks + swizzle_b(k, n // 8, False)) * 16
    else:
        n, k = wn * cfg.wn + (lane >> 2), lane & 3
        ob = (k * b_chunks + swizzle_b(k, n // 4, True)) * 16 + (n % 4) * 4
    out = {}
    for kk in range(cfg.bk // mma_k):
        for i in range(mt):
            out[("a", kk, i)] = (oa ^ (kk * 32)) + i * 16 * a_chunks * 16
        for j in range(nt if tf32 else nt // 2):
            rows = kk * (8 if tf32 else 16) * b_chunks * 16
            out[("b", kk, j)] = (ob ^ ((j & 3) * 32)) + (j >> 2) * 128 + rows
    return out


# ------------------------------------------------------------------------------------------
# v7 TF32 (tc_v7_wgmma_tf32) on the CPU: its B tile and the B^T fragments each lane loads
# ------------------------------------------------------------------------------------------
def v7_tf32_b_offset(k: int, n: int) -> int:
    """tensor_cores.cu v7t_b_offset: byte offset of B[k][n] in the 32 x 128 TF32 B tile (rows of
    512 bytes, chunk n / 4 XOR 2 (k & 3))."""
    bn = V7T_TILE[1]
    return k * bn * 4 + (((n >> 2) ^ ((k & 3) << 1)) << 4) + (n & 3) * 4


def v7_tf32_fragment(lane: int, warpgroup: int, warp: int, kk: int) -> list:
    """The (k, n) of B each of the lane's four registers holds for k-step ``kk`` in tc_v7_wgmma_tf32,
    as the kernel loads them: wgmma's A operand is B^T, row = n, so registers 0-3 hold
    B^T[nw][t], B^T[nw + 8][t], B^T[nw][t + 4], B^T[nw + 8][t + 4] (nw = 64 warpgroup + 16 warp + g)."""
    g, t = lane >> 2, lane & 3
    nw, k = warpgroup * 64 + warp * 16 + g, kk * 8 + t
    return [(k, nw), (k, nw + 8), (k + 4, nw), (k + 4, nw + 8)]
