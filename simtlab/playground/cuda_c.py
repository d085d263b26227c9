"""``%%simt --cuda``: a CUDA C cell, compiled by NVRTC (CuPy's ``RawModule``) and run on the GPU.

    %%simt --cuda grid=8 block=128 a=rand(1000) out=zeros(1000) n=1000
    extern "C" __global__ void twice(const float* a, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = 2.0f * a[i];
    }

Parameters are read from the signature: a pointer takes a NumPy array (copied to the GPU
and back), ``int``/``float``/``double``... a scalar of that C type. The emulator runs Python
kernels only, so without a GPU the cell reports that and points to the Python form.
"""

from __future__ import annotations

import html
import re

import numpy as np

from ..html_theme import CARD_TEXT, NOTE_EDGE
from .inputs import Recipe
from .magic import MagicError, parse_launch, split_line

C_SCALARS = {"int": np.int32, "unsigned": np.uint32, "unsigned int": np.uint32, "float": np.float32,
             "double": np.float64, "long": np.int64, "long long": np.int64, "size_t": np.uint64,
             "int32_t": np.int32, "int64_t": np.int64, "uint32_t": np.uint32}
_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)', re.S)

PYTHON_FORM = """%%simt grid=8 block=128 a=rand(1000) out=zeros(1000)
@cuda.jit
def twice(a, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = 2 * a[i]"""


def kernel_signature(code: str, wanted: str | None = None) -> tuple[str, list[tuple[str, str]]]:
    """``(name, [(parameter name, C type)])`` of the cell's ``extern "C" __global__`` kernel."""
    found = _KERNEL.findall(code)
    if not found:
        raise MagicError('no kernel found: a %%simt --cuda cell needs `extern "C" __global__ void name(...)` '
                         "(extern \"C\" keeps the name NVRTC gives it)")
    if wanted is not None:
        found = [f for f in found if f[0] == wanted]
        if not found:
            raise MagicError(f"kernel={wanted}: the cell has no extern \"C\" __global__ kernel of that name")
    name, params = found[-1]
    out = []
    for p in (p.strip() for p in params.split(",") if p.strip()):
        m = re.match(r"(.*?)(\w+)\s*$", p)
        ctype = re.sub(r"\b(const|__restrict__|restrict)\b", "", m.group(1)).strip()
        out.append((m.group(2), " ".join(ctype.split())))
    return name, out


class CudaCResult:
    """What a CUDA C cell gives back: ``ran`` (on a GPU), ``outputs``, ``timing`` (median ms),
    ``message`` (why it did not run). Shows as an HTML card."""

    def __init__(self, name, ran, message="", outputs=None, timing=None):
        self.name, self.ran, self.message = name, ran, message
        self.outputs = outputs or {}
        self.timing = timing

    def _repr_html_(self):
        if not self.ran:
            return (f"<div style='border-left:6px solid {NOTE_EDGE};padding:6px 12px;{CARD_TEXT}'><b>{html.escape(self.name)}: "
                    f"not run</b><p>{html.escape(self.message)}</p><pre>{html.escape(PYTHON_FORM)}</pre></div>")
        return (f"<p><b>{html.escape(self.name)}</b> ran on the GPU: median of {self.timing['repeat']} launches "
                f"<b>{self.timing['median_ms']:.4f} ms</b>; outputs in <code>.outputs</code>: "
                f"{', '.join(self.outputs)}</p>")

    def __repr__(self):
        return f"<CudaCResult {self.name} ran={self.ran}>"


def _convert(value, ctype: str, name: str):
    if ctype.endswith("*"):
        if not isinstance(value, np.ndarray):
            raise MagicError(f"{name}: the kernel takes a pointer ({ctype}); give an array, e.g. {name}=zeros(1000)")
        return value
    if ctype not in C_SCALARS:
        raise MagicError(f"{name}: parameter type {ctype!r} is not one %%simt --cuda passes "
                         f"({', '.join(C_SCALARS)} or a pointer)")
    return C_SCALARS[ctype](value)


def run_cuda_c(line: str, cell: str, namespace: dict, *, gpu: bool | None = None, repeat: int = 20):
    """Compile and run a CUDA C cell on the GPU; without one, say so (no exception)."""
    from .. import backend

    _, items = split_line(line)
    name, params = kernel_signature(cell, items.get("kernel"))
    launch = parse_launch(" ".join(t for t in line.split() if t != "--cuda"), [p for p, _ in params], namespace)
    if gpu is None:
        gpu = backend.gpu_available()
    if not gpu:
        return CudaCResult(name, False, "CUDA C needs a GPU (for now): the emulator runs numba-cuda Python "
                           f"kernels only ({backend.unavailable_reason() or 'no GPU here'}). Write the kernel in "
                           "Python with @cuda.jit and use %%simt without --cuda, like this:")
    import cupy

    from ..cuda_source import source_kernel

    rng = np.random.default_rng(launch["options"].get("seed", 0))
    values = [a.make(rng) if isinstance(a, Recipe) else a for a in launch["args"]]
    values = [_convert(v, ctype, p) for v, (p, ctype) in zip(values, params)]
    kernel = source_kernel(cell, name)
    device = [cupy.asarray(v) if isinstance(v, np.ndarray) else v for v in values]
    grid = launch["griddim"] if isinstance(launch["griddim"], tuple) else (launch["griddim"],)
    block = launch["blockdim"] if isinstance(launch["blockdim"], tuple) else (launch["blockdim"],)
    shared = launch["options"].get("shared_bytes", 0)
    fresh = [d.copy() if isinstance(d, cupy.ndarray) else d for d in device]
    kernel(grid, block, tuple(fresh), shared_mem=shared)
    outputs = {p: cupy.asnumpy(d) for (p, _), d in zip(params, fresh) if isinstance(d, cupy.ndarray)}
    timing = backend.time_gpu(lambda: kernel(grid, block, tuple(device), shared_mem=shared), repeat=repeat)
    timing["repeat"] = repeat
    return CudaCResult(name, True, outputs=outputs, timing=timing)


__all__ = ["run_cuda_c", "kernel_signature", "CudaCResult"]
