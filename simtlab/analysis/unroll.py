"""What the convolution kernels of chapter 7 do to memory, read from the emulator's trace.

- :func:`trace_unroll` runs the unroll kernel (im2col) on a small input whose every element holds
  its own index + 1, so the unrolled matrix says where each of its entries came from, and the
  trace's reads of ``x`` say how often each input element was copied.
- :func:`global_traffic` runs a version of the whole layer and counts, per global array, the
  bytes it allocates and the bytes its reads and writes request.
- :func:`gather_coalescing` runs the implicit GEMM on the same layer in NCHW (v3) and NHWC
  (``conv_v3_implicit_gemm_nhwc``) and counts the 32-byte sectors of each warp request of the
  gather from ``x``: where putting the channel innermost pays, and where (C = 1) it cannot.
- :func:`divisions_executed` counts the integer divisions and remainders (``//``, ``%``) a
  numba run executed, from its traced lines; :func:`ptx_opcode_counts` the PTX instructions a
  CUDA C run executed, by opcode (``div``/``rem`` among them): what v3b's offset table removes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["UnrollTrace", "trace_unroll", "global_traffic", "addresses_per_request", "gather_coalescing",
           "GATHER_LAYERS", "divisions_executed", "division_ops", "ptx_opcode_counts", "ptx_divisions",
           "offset_table_counts"]


@dataclass
class UnrollTrace:
    x_shape: tuple          # (B, C, H, W)
    k: int
    stride: int
    pad: int
    ho: int
    wo: int
    source: np.ndarray      # (C*K*K, B*Ho*Wo): flat index into x of each entry, -1 for padding
    copies: np.ndarray      # x's shape: how many times the unroll kernel read each input element
    run: object             # the emulator run of the unroll kernel

    @property
    def duplication(self) -> float:
        """Entries of the unrolled matrix per input element (padding entries included)."""
        return self.source.size / int(np.prod(self.x_shape))


def trace_unroll(x_shape=(1, 1, 6, 6), k: int = 3, stride: int = 1, padding="valid") -> UnrollTrace:
    """Unroll an input of ``x_shape`` with the course's im2col kernel on the emulator."""
    from .. import emulate
    from ..kernels import conv as K

    b, c, h, w = x_shape
    ho, wo, pad = K.conv_geometry(h, w, k, stride, padding)
    n = b * c * h * w
    if n >= 2**24:
        raise ValueError(f"an input of {n:,} elements is too large to label exactly in float32: keep it small")
    x = np.arange(1, n + 1, dtype=np.float32).reshape(x_shape)       # element i holds i + 1
    cols = np.zeros((c * k * k, b * ho * wo), np.float32)
    run = emulate(K.im2col, K.cdiv(cols.size, K.BLOCK), K.BLOCK, x, cols, k, wo, stride, pad)
    reads = run.accesses("x", "read")
    copies = np.bincount(reads.index.astype(np.int64), minlength=n).reshape(x_shape)
    return UnrollTrace(tuple(x_shape), k, stride, pad, ho, wo, cols.astype(np.int64) - 1, copies, run)


def global_traffic(version: str, x_shape=(2, 2, 8, 8), m: int = 4, k: int = 3, stride: int = 1,
                   padding="valid", seed: int = 0) -> dict:
    """One version of the layer on the emulator: per global array, bytes allocated and bytes read
    and written by its requests (``{"arrays": {name: {...}}, "allocated", "read", "written"}``)."""
    from .. import emulate
    from ..kernels import conv as K

    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal((m, x_shape[1], k, k)).astype(np.float32)
    runs = []

    def launch(kernel, grid, block, *args):
        runs.append(emulate(kernel, grid, block, *args))

    K.conv_with(version, x, w, launch, stride, padding)
    arrays: dict = {}
    for run in runs:
        mem = run.memory[run.memory.space == 0]
        for info in run.arrays:
            if info.space != "global":
                continue
            rows = mem[mem.array == info.id]
            entry = arrays.setdefault(info.name, {"allocated": int(np.prod(info.shape)) * info.itemsize,
                                                  "read": 0, "written": 0})
            entry["read"] += int(rows.width[rows.kind == 0].sum())
            entry["written"] += int(rows.width[rows.kind == 1].sum())
    return {"version": version, "arrays": arrays,
            "allocated": sum(a["allocated"] for a in arrays.values()),
            "read": sum(a["read"] for a in arrays.values()),
            "written": sum(a["written"] for a in arrays.values())}


def addresses_per_request(run, space: int = 3) -> np.ndarray:
    """Distinct addresses in each warp request to one memory space (3: constant), from the trace:
    1 everywhere means every request was a broadcast of one word to all its lanes."""
    mem = run.memory[run.memory.space == space]
    if len(mem) == 0:
        return np.zeros(0, np.int64)
    keys = np.stack([mem.gwarp.astype(np.int64), mem.site.astype(np.int64), mem.seq.astype(np.int64)], axis=1)
    _, req = np.unique(keys, axis=0, return_inverse=True)
    pairs = np.unique(np.stack([req.ravel(), mem.address.astype(np.int64)], axis=1), axis=0)
    return np.bincount(pairs[:, 0])


# ------------------------------------------------------------------------------------------
# NCHW against NHWC: the implicit GEMM's gather from x, request by request
# ------------------------------------------------------------------------------------------
#: the layers :func:`gather_coalescing` compares: 16 filters, one 10 x 10 image, C channels, K x K
GATHER_LAYERS = tuple((c, k) for k in (3, 7) for c in (1, 4, 16, 32))


def _implicit_gemm_run(layout: str, x, w, stride: int = 1, pad: int = 0):
    """One traced run of the course's implicit GEMM on ``x`` (B, C, H, W) and ``w`` (M, C, K, K),
    in ``layout`` "nchw" (v3) or "nhwc" (the same arrays transposed, C innermost)."""
    from .. import emulate
    from ..kernels import conv as K

    b, c, h, wd = x.shape
    m, k = w.shape[0], w.shape[2]
    ho, wo = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    grid = (K.cdiv(b * ho * wo, K.TILE), K.cdiv(m, K.TILE))
    if layout == "nchw":
        y = np.zeros((b, m, ho, wo), np.float32)
        return emulate(K.conv_v3_implicit_gemm, grid, (K.TILE, K.TILE), x, w, y, stride, pad), y
    if layout != "nhwc":
        raise ValueError(f"layout must be 'nchw' or 'nhwc', not {layout!r}")
    y = np.zeros((b, ho, wo, m), np.float32)
    xt = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    wt = np.ascontiguousarray(w.transpose(0, 2, 3, 1))
    run = emulate(K.conv_v3_implicit_gemm_nhwc, grid, (K.TILE, K.TILE), xt, wt, y, stride, pad)
    return run, np.ascontiguousarray(y.transpose(0, 3, 1, 2))


def _x_read_requests(run):
    from .coalescing import requests

    r = requests(run.memory_columns)
    return r[(r.array == run.array("x").id) & (r.kind == 0)]


def gather_coalescing(layers=GATHER_LAYERS, m: int = 16, hw: int = 10, seed: int = 0) -> list[dict]:
    """For each (C, K) of ``layers``: the implicit GEMM in NCHW and in NHWC on one ``hw`` x ``hw``
    image with ``m`` filters, traced. One dict per layer and layout: ``sectors`` (mean 32-byte
    sectors per warp request of the gather from x), ``needed`` (mean sectors its distinct bytes
    would fill if they were contiguous: the request's floor), ``used`` (share of the fetched
    sector bytes the lanes asked for), ``requests``, and the largest error of the output
    against ``conv2d_cpu`` (both layouts compute the same layer)."""
    from ..kernels import conv as K

    rng = np.random.default_rng(seed)
    rows = []
    for c, k in layers:
        x = rng.standard_normal((1, c, hw, hw)).astype(np.float32)
        w = rng.standard_normal((m, c, k, k)).astype(np.float32)
        want = K.conv2d_cpu(x, w)
        for layout in ("nchw", "nhwc"):
            run, y = _implicit_gemm_run(layout, x, w)
            r = _x_read_requests(run)
            sectors = r.sectors.astype(float)
            rows.append({"C": c, "K": k, "layout": layout, "requests": len(r),
                         "sectors": float(sectors.mean()),
                         "needed": float(np.ceil(r.used / 32).mean()),
                         "used": float(r.used.sum() / (32 * sectors.sum())),
                         "error": float(np.abs(y - want).max())})
    return rows


# ------------------------------------------------------------------------------------------
# Divisions per element: what a precomputed gather table saves
# ------------------------------------------------------------------------------------------
def division_ops(source_line: str) -> int:
    """How many integer divisions and remainders by a value known only at run time one line of
    Python source holds: ``//``, ``%``, ``//=``, ``%=`` followed by a name that is not an
    ALL_CAPS constant (``// TILE``, ``% 2``: the compiler turns a division by a compile-time
    constant into shifts and multiplies). Comments and strings are not counted."""
    import io
    import tokenize

    tokens = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source_line.strip() + "\n").readline):
            tokens.append(tok)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass                      # a line that opens a bracket closed on the next: its tokens so far
    count = 0
    for tok, nxt in zip(tokens, tokens[1:]):
        if tok.type == tokenize.OP and tok.string in ("//", "%", "//=", "%="):
            constant = nxt.type == tokenize.NUMBER or (nxt.type == tokenize.NAME and nxt.string.isupper())
            count += not constant
    return count


def divisions_executed(run) -> dict:
    """A traced numba run's integer divisions and remainders: ``total`` (summed over every
    thread's executed lines), ``per_thread`` (the mean) and ``lines`` ({line: divisions each
    time it runs} for the lines that hold any)."""
    cols = run.line_columns
    sites, counts = np.unique(np.asarray(cols.site, np.int64), return_counts=True)
    total, lines = 0, {}
    for site, executed in zip(sites, counts):
        ops = division_ops(run.source(0, site=int(site)))
        if ops:
            from ..simt import site_line

            lines[int(site_line(int(site)))] = ops
            total += ops * int(executed)
    threads = run.num_blocks * run.threads_per_block
    return {"total": total, "per_thread": total / threads, "lines": lines}


def ptx_opcode_counts(run) -> dict:
    """A traced CUDA C run's PTX instructions by opcode: {opcode: warp executions}
    (``run.ptx_profile``: one per warp per execution), most executed first."""
    profile = getattr(run, "ptx_profile", None)
    if profile is None:
        raise ValueError("ptx_opcode_counts needs a traced CUDA C run (simtlab.cuda_c kernel, trace=True)")
    counts: dict = {}
    for ins, warps in zip(profile.kernel.entry.instructions, profile.warps):
        counts[ins.opcode] = counts.get(ins.opcode, 0) + int(warps)
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def ptx_divisions(run) -> int:
    """Warp executions of integer ``div``/``rem`` instructions in a traced CUDA C run."""
    return sum(n for op, n in ptx_opcode_counts(run).items()
               if op.split(".")[0] in ("div", "rem") and ".f" not in op)


def offset_table_counts(x, w, versions=("v3 implicit GEMM", "v3b implicit GEMM, offset table")) -> list[dict]:
    """v3 against v3b on one layer, from traced runs: per version, the numba kernel's integer
    divisions per thread (``divisions_executed``) and, where NVRTC is installed, the CUDA C twin's
    PTX warp instructions and its integer div/rem among them (``ptx_note`` says why not otherwise)."""
    from .. import emulate
    from ..kernels import conv as K
    from ..versions import find

    rows = []
    for label in versions:
        runs = []
        K.conv_with(label, x, w, lambda *a: runs.append(emulate(*a)))
        row = {"version": label, "divisions per thread (numba)": round(divisions_executed(runs[0])["per_thread"], 2)}
        try:
            from ..cuda_c_kernels import emulate_version

            _, (ptx_run,) = emulate_version("conv", find(K.VERSIONS, label), x, w)
            counts = ptx_opcode_counts(ptx_run)
            row.update({"PTX warp instructions (CUDA C)": sum(counts.values()),
                        "integer div/rem among them": ptx_divisions(ptx_run)})
        except Exception as e:                    # no NVRTC (the cuda-c extra): the numba count stands
            row["ptx_note"] = f"CUDA C not run on the CPU: {type(e).__name__}"
        rows.append(row)
    return rows
