"""``%%simt --cuda``: a CUDA C cell, compiled by NVRTC and run on the CPU by the PTX engine.

    %%simt --cuda grid=8 block=128 a=rand(1000) out=zeros(1000) n=1000
    extern "C" __global__ void twice(const float* a, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = 2.0f * a[i];
    }

Parameters are read from the signature: a pointer takes a NumPy array, ``int``/``float``/
``double``... a scalar of that C type. The cell's value is the same ``Playground`` a Python
cell gives (every tab, plus the PTX view of the source); on a machine with a GPU the kernel
also runs there (NVRTC through CuPy) and the banner says whether the outputs agree.
"""

from __future__ import annotations

import re

import numpy as np

from ..html_theme import ERROR, SUCCESS
from .inputs import Recipe
from .magic import MagicError, parse_launch, split_line

C_SCALARS = {"int": np.int32, "unsigned": np.uint32, "unsigned int": np.uint32, "float": np.float32,
             "double": np.float64, "long": np.int64, "long long": np.int64, "size_t": np.uint64,
             "int32_t": np.int32, "int64_t": np.int64, "uint32_t": np.uint32}
_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)', re.S)


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


def _convert(value, ctype: str, name: str):
    if ctype.endswith("*"):
        if not isinstance(value, np.ndarray):
            raise MagicError(f"{name}: the kernel takes a pointer ({ctype}); give an array, e.g. {name}=zeros(1000)")
        return value
    if ctype not in C_SCALARS:
        raise MagicError(f"{name}: parameter type {ctype!r} is not one %%simt --cuda passes "
                         f"({', '.join(C_SCALARS)} or a pointer)")
    return C_SCALARS[ctype](value)


def compile_cell(cell: str, name: str):
    """The cell's kernel compiled by NVRTC (its lines registered for the source views); a
    ``MagicError`` with NVRTC's own message (``<cuda_c ...>(line): error: ...``, the cell's
    line) or with the command that installs a missing compiler."""
    from ..cuda_c_kernels import CompilerMissing, CudaCompileError, cuda_c

    try:
        return cuda_c(cell, name)
    except CompilerMissing as exc:
        raise MagicError(f"CUDA C on the CPU needs NVIDIA's compiler: {exc}") from None
    except CudaCompileError as exc:
        raise MagicError(f"NVRTC could not compile the cell (line numbers count from the cell's "
                         f"first line):\n{exc.log.strip()}") from None


def run_cuda_c(line: str, cell: str, namespace: dict, *, gpu: bool | None = None, repeat: int = 20,
               result_name: str | None = None):
    """Compile a CUDA C cell and run it on the PTX engine as a ``Playground``; on a GPU, run it
    there too and compare the outputs (``pg.gpu_result()``, shown in the banner)."""
    from .. import backend
    from .session import Playground

    _, items = split_line(line)
    name, params = kernel_signature(cell, items.get("kernel"))
    launch = parse_launch(" ".join(t for t in line.split() if t != "--cuda"), [p for p, _ in params], namespace)
    kernel = compile_cell(cell, name)
    rng = np.random.default_rng(launch["options"].get("seed", 0))
    recipes = [a if isinstance(a, Recipe) else None for a in launch["args"]]
    values = [a.make(rng) if isinstance(a, Recipe) else a for a in launch["args"]]
    values = [_convert(v, ctype, p) for v, (p, ctype) in zip(values, params)]
    gpu = backend.gpu_available() if gpu is None else bool(gpu)
    pg = Playground(kernel, launch["griddim"], launch["blockdim"], *values, recipes=recipes, gpu=gpu,
                    repeat=repeat, **launch["options"])
    if result_name is not None:
        namespace[result_name] = pg
    if gpu and pg.error is None:
        result, _ = pg.gpu_result()
        pg.banner.value += "<br>" + gpu_agreement_html(result)
    return pg


def gpu_agreement_html(result: dict) -> str:
    """One line: did the GPU's outputs equal the PTX engine's (and its median time)?"""
    if result["all_match"]:
        return (f"<span style='color:{SUCCESS}'>the GPU's outputs equal the PTX engine's</span> "
                f"(GPU: {result['median_ms']:.4f} ms, median of {result['repeat']} launches)")
    differ = [n for n, c in result["outputs"].items() if not c["match"]]
    return (f"<span style='color:{ERROR}'>the GPU's outputs differ from the PTX engine's in "
            f"{', '.join(differ)}</span> (see the GPU tab)")


__all__ = ["run_cuda_c", "kernel_signature", "compile_cell", "gpu_agreement_html"]
