"""The SASS of chapter 6's GEMM kernels, CUDA C and numba side by side (the H100's machine code).

    python benchmarks/sass_gemm.py [--out DIR]

Why v1 and v2 (the same source, the thread-to-element map swapped) differ 4x in CUDA C, and why
numba's v2 is slower than CUDA C's v2: the instruction mix of each kernel (opcode counts of the
whole kernel, and of its hottest loop: the instructions between the last backward branch's
target and that branch), then the full listings. CUDA C: NVRTC (cuda-bindings) to an sm_90
CUBIN of the kernel alone (``kernel_only_source``: the same code as in the whole file), then
``cuobjdump -sass``; numba: ``inspect_sass`` (nvdisasm). Also v7 (CUDA C and numba), the v8
champion, and numba's v7 with linked float4 loads (are the 128-bit loads inline?).
Writes ``DIR/sass_gemm.txt`` (DIR: ``$OUT`` or benchmarks/results); each kernel in its own try.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OPCODE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;\n]*)")
CUDA_C = ("gemm_v1_naive", "gemm_v2_coalesced", "gemm_v7_warptile")
NUMBA = ("gemm_v1_naive", "gemm_v2_coalesced", "gemm_v7_warptile")


def instructions(sass: str) -> list[tuple[int, str, str]]:
    """``[(address, opcode, operands)]`` of a SASS listing."""
    return [(int(m.group(1), 16), m.group(2), m.group(3).strip()) for m in OPCODE.finditer(sass)]


def hottest_loop(ins) -> list:
    """The instructions of the kernel's main loop: of the loops (a backward branch and its target),
    the one with the most FFMAs (the k loop, unrolled by the compiler)."""
    loops = []
    for addr, op, args in ins:
        target = re.search(r"0x([0-9a-f]+)", args) if op.startswith("BRA") else None
        if target and int(target.group(1), 16) <= addr:
            start = int(target.group(1), 16)
            loops.append([x for x in ins if start <= x[0] <= addr])
    return max(loops, key=lambda body: (sum(op.startswith("FFMA") for _, op, _ in body), len(body)), default=[])


def mix(ins) -> str:
    counts = collections.Counter(op for _, op, _ in ins)
    return ", ".join(f"{op} {n}" for op, n in counts.most_common())


def cuda_c_sass(name: str, source: str) -> str:
    from simtlab.gpubench.tensor_cores import _nvrtc_cubin

    cubin, _, tool = _nvrtc_cubin(source, "gemm.cu", ["-std=c++17", "--gpu-architecture=sm_90", "-lineinfo"])
    cuobjdump = shutil.which("cuobjdump") or next((p for p in ("/usr/local/cuda/bin/cuobjdump",) if Path(p).exists()), None)
    nvdisasm = shutil.which("nvdisasm") or next((p for p in ("/usr/local/cuda/bin/nvdisasm",) if Path(p).exists()), None)
    if not (cuobjdump or nvdisasm):
        raise RuntimeError("neither cuobjdump nor nvdisasm on this machine")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.cubin"
        path.write_bytes(cubin)
        command = [cuobjdump, "-sass", str(path)] if cuobjdump else [nvdisasm, "-c", str(path)]
        out = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"{command[0]} failed: {out.stderr[:500]}")
    return f"(compiled by {tool}, sm_90; {Path(command[0]).name})\n" + out.stdout


def numba_sass(kernel) -> str:
    from numba import float32

    sig = (float32[:, ::1], float32[:, ::1], float32[:, ::1])
    kernel.compile(sig)
    return kernel.inspect_sass(sig)


def report(title: str, sass: str, listing: bool) -> str:
    ins = instructions(sass)
    loop = hottest_loop(ins)
    lines = [f"==== {title}: {len(ins)} instructions ====", "whole kernel: " + mix(ins),
             f"main loop ({len(loop)} instructions): " + mix(loop)]
    if listing:
        lines += ["main loop listing:"] + [f"  {a:05x}  {op} {args}" for a, op, args in loop]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or ROOT / "benchmarks" / "results"))
    args = p.parse_args(argv)
    from simtlab.cuda_c_kernels import kernel_only_source
    from simtlab.kernels import gemm as G

    source = G.CU_PATH.read_text()
    jobs = [(f"CUDA C {n}", lambda n=n: cuda_c_sass(n, kernel_only_source(source, n)), n != "gemm_v7_warptile")
            for n in CUDA_C]
    jobs.append((f"CUDA C {G.V8_CHAMPION} (v8 champion)", lambda: cuda_c_sass(G.V8_CHAMPION, G.v8_source(G.V8_CHAMPION)),
                 False))
    jobs += [(f"numba {n}", lambda n=n: numba_sass(getattr(G, n)), n != "gemm_v7_warptile") for n in NUMBA]
    jobs.append(("numba v7 float4 (linked CUDA C loads)", lambda: numba_sass(G.numba_v7_float4_kernel()), True))
    parts, full = [], []
    for title, job, listing in jobs:
        try:
            sass = job()
            parts.append(report(title, sass, listing))
            full.append(f"==== full SASS: {title} ====\n{sass}")
        except Exception:                                     # noqa: BLE001 (one kernel fails, the others go on)
            parts.append(f"==== {title}: FAILED ====\n{traceback.format_exc()[-1500:]}")
        print(parts[-1].split("\nmain loop listing")[0], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sass_gemm.txt").write_text("\n\n".join(parts) + "\n\n" + "\n\n".join(full) + "\n")
    print(f"wrote {args.out / 'sass_gemm.txt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
