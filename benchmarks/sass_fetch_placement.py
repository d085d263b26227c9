"""Where ptxas puts v9's next-tile global loads in the main loop, with the fetch as kernels/gemm.cu
has it (unconditional) and under ``if (tile + 1 < tiles)`` (the first v9, text-substituted here).

    NVDISASM=/path/to/nvdisasm python benchmarks/sass_fetch_placement.py [--kernel gemm_v9_...] [--out FILE]

Compiles the configuration alone (kernels/gemm.py v9_source) to an sm_90 CUBIN with NVRTC
(cuda-bindings), disassembles it (nvdisasm: the pip wheel nvidia-cuda-nvdisasm has one), finds the
tile loop (the block that ends with the backward branch after BAR.SYNC) and reports, for each build,
how many FFMAs of the loop come before the first LDG.E.128 and after the last one: the FFMAs whose
time hides the loads' latency before the stash (STS) needs their registers. No GPU needed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

UNCONDITIONAL = """            if (ASYNC) copy(s ^ 1, (tile + 1) * BK);    // s ^ 1 was last read before the last barrier"""
FETCH = "            fetch((tile + 1) * BK);\n"
STASH = "                    stash(s ^ 1);\n"


def conditional(source: str) -> str:
    """The first v9's loop: the fetch and the stash (and the barrier) only while a next tile exists."""
    assert FETCH in source and STASH in source, "kernels/gemm.cu's v9 loop changed: update this probe"
    source = source.replace(FETCH, "            if (tile + 1 < tiles) fetch((tile + 1) * BK);\n", 1)
    return source.replace("                } else {                       // the other buffer was last read before the last barrier\n",
                          "                } else if (tile + 1 < tiles) {\n", 1)


def sass(source: str, kernel: str, nvdisasm: str) -> str:
    from simtlab.gpubench.tensor_cores import _nvrtc_cubin

    cubin, _, _ = _nvrtc_cubin(source, "gemm.cu", ["--gpu-architecture=sm_90", "-std=c++17"])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        text = subprocess.run([nvdisasm, "-c", str(path)], capture_output=True, text=True, check=True).stdout
    start = text.index(f".text.{kernel}:")
    end = text.find(".text.", start + 10)
    return text[start:end if end > 0 else None]


def placement(body: str) -> dict:
    ops = [m.group(1) for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", body)]
    bars = [i for i, op in enumerate(ops) if op.startswith("BAR.SYNC")]
    loop = ops[bars[0] + 1:bars[-1] + 1]                     # from after the prologue's barrier to the loop's barrier
    ldg = [i for i, op in enumerate(loop) if op.startswith("LDG")]
    ffma = [i for i, op in enumerate(loop) if op == "FFMA"]
    sts = [i for i, op in enumerate(loop) if op.startswith("STS")]
    return {"loop_instructions": len(loop), "loop_ffma": len(ffma), "ldg": len(ldg),
            "ffma_before_first_ldg": sum(i < ldg[0] for i in ffma) if ldg else None,
            "ffma_between_last_ldg_and_first_sts": sum(ldg[-1] < i < sts[0] for i in ffma) if ldg and sts else None}


def main(argv=None) -> int:
    from simtlab.kernels import gemm as G

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernel", default=G.V9_CHAMPION)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    nvdisasm = os.environ.get("NVDISASM") or shutil.which("nvdisasm")
    if not nvdisasm:
        sys.exit("no nvdisasm: pip install nvidia-cuda-nvdisasm and set NVDISASM to its bin/nvdisasm")
    src = G.v9_source(args.kernel)
    lines = [f"v9 {args.kernel}: FFMAs of the tile loop around the next tile's global loads (NVRTC sm_90, nvdisasm)"]
    for name, text in (("fetch under if (tile + 1 < tiles)", conditional(src)), ("fetch unconditional (gemm.cu)", src)):
        r = placement(sass(text, args.kernel, nvdisasm))
        lines.append(f"{name:<36} " + ", ".join(f"{k} {v}" for k, v in r.items()))
    out = "\n".join(lines)
    print(out)
    if args.out:
        args.out.write_text(out + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
