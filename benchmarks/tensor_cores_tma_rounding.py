"""Does the TMA round? Chapter 9's best TF32 mma.sync kernels with tensor maps that say TF32 (the
``_rn`` kernels) beside the same kernels with FP32 maps, and cuBLAS TF32, on the H100.

    python benchmarks/tensor_cores_tma_rounding.py [--rounds 6] [--seconds 3] [--out F]

1. What the tensor core reads: C = A @ I (512^3) gives A as each GEMM rounded it. The fraction of
   C's elements equal to A truncated to TF32, rounded to nearest even and rounded to nearest with
   ties away (cvt.rna), over all of A and over its first quarter, whose elements are all ties
   (the low 13 bits exactly 0x1000).
2. How close: the 4096^3 benchmark inputs against float64 on the GPU, in the course's unit
   (max |C - C64| / (|A| @ |B|), kernels/tensor_cores.py relative_error) and the mean |C - C64|.
3. What it costs: each back to back for ``--seconds`` at the board's power limit, the list
   ``--rounds`` times, every other time reversed (as benchmarks/tensor_cores_power.py): cuBLAS on
   B^T, the kernels with either map, the FP32-map kernel and cuBLAS on inputs already rounded to TF32
   in memory (``@rounded``: the low bits zero in DRAM and L2 too), and warps of nothing but MMAs on
   random and on 10-bit mantissas (benchmarks/mma_operands.py). The millijoules of one GEMM are the
   board's power times the time of one launch.

Writes JSON (``--out``; default ``$OUT/tensor_cores_tma_rounding.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("CUPY_TF32", "0")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

PAIR = "tc_v6w_tf32_256x128_s4_cluster2_producer_persistent_staged_early_mmafirst"
ALONE = "tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst"
CUBLAS = "cublas:tf32:bt"
ROUNDED = "@rounded"                    # a run's name suffix: its inputs rounded to TF32 in memory first
COMMAND = "bash tools/device_tensor_cores_tma_rounding.sh"


def _tf32_readings(x) -> dict:
    """float32 ``x`` as each TF32 rounding reads it: the course's own helpers (kernels/tensor_cores.py's round_to
    truncating as mma.sync does, and the PTX engine's cvt.rna and TMA roundings)."""
    from simtlab.emulator.ptx.tensor_ops import tf32_round_nearest_away, tf32_round_nearest_even
    from simtlab.kernels import tensor_cores as T

    bits = x.view(np.uint32)
    return {"truncated": T.round_to(x, "tf32", tf32="truncate").astype(np.float32),
            "nearest even": tf32_round_nearest_even(bits).view(np.float32),
            "nearest, ties away": tf32_round_nearest_away(bits).view(np.float32)}


def _gemms(a, b, c):
    """name -> run() of C = A @ B (b: B, K x N) for the kernels compared here."""
    import cupy

    from ncu_tensor_cores import version_of
    from simtlab.gpubench import tensor_cores as TC

    runs = {CUBLAS: TC.cublas_runner("tf32", a, cupy.ascontiguousarray(b.T), c, b_transposed=True)}
    for kernel in (PAIR, PAIR + "_rn", ALONE, ALONE + "_rn"):
        runs[kernel] = TC.runner(version_of(kernel), a, b, c)
    return runs


def rounding(n: int = 512) -> dict:
    import cupy

    rng = np.random.default_rng(3)
    a = rng.standard_normal((n, n)).astype(np.float32)
    ties = slice(0, n // 4)
    a[ties] = ((a[ties].view(np.uint32) & np.uint32(0xFFFFE000)) | np.uint32(0x1000)).view(np.float32)
    readings = _tf32_readings(a)
    c = cupy.zeros((n, n), cupy.float32)
    out = {}
    for name, run in _gemms(cupy.asarray(a), cupy.eye(n, dtype=cupy.float32), c).items():
        c.fill(0)
        run()
        got = cupy.asnumpy(c)
        out[name] = {rule: {"all": float(np.mean(got == want)), "ties": float(np.mean(got[ties] == want[ties]))}
                     for rule, want in readings.items()}
        print("rounding", name, out[name], flush=True)
    return out


def accuracy(n: int = 4096) -> dict:
    import cupy

    from simtlab.gpubench import tensor_cores as TC

    a32, b32, a, b = TC.device_inputs((n, n, n), "tf32")
    a64, b64 = a32.astype(cupy.float64), b32.astype(cupy.float64)
    want, scale = a64 @ b64, cupy.abs(a64) @ cupy.abs(b64)
    c = cupy.zeros((n, n), cupy.float32)
    out = {}
    for name, run in _gemms(a, b, c).items():
        c.fill(0)
        run()
        err = cupy.abs(c.astype(cupy.float64) - want)
        out[name] = {"relative_error": float((err / scale).max()), "mean_abs_error": float(err.mean())}
        print("accuracy", name, out[name], flush=True)
    return out


def power(rounds: int, seconds: float, n: int = 4096) -> list:
    import cupy

    import tensor_cores_power as TP
    from mma_operands import launcher
    from simtlab.gpubench import tensor_cores as TC

    _, _, a, b = TC.device_inputs((n, n, n), "tf32")
    c = cupy.empty((n, n), cupy.float32)
    rounded = [cupy.asarray(_tf32_readings(cupy.asnumpy(x))["nearest even"]) for x in (a, b)]
    runs = {name: (run, 2 * n ** 3) for name, run in _gemms(a, b, c).items()}
    on_rounded = _gemms(*rounded, c)
    for name in (CUBLAS, PAIR):
        runs[name + ROUNDED] = (on_rounded[name], 2 * n ** 3)
    for variant in ("a4b8_rand", "a4b8"):
        runs["mma:" + variant] = launcher(variant)
    names = list(runs)
    rows = []
    for r in range(rounds):
        for name in names[::-1] if r % 2 else names:
            row = {**TP.back_to_back(name, *runs[name], seconds), "round": r}
            print(f"{r} {name:<80} {row['tflops']:7.1f} TFLOP/s {row['sm_clock_mhz']} MHz {row['power_w']} W "
                  f"{row['power_w'] * row['ms']:.0f} mJ", flush=True)
            rows.append(row)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "/tmp") / "tensor_cores_tma_rounding.json")
    args = p.parse_args(argv)
    from simtlab.gpubench.harness import stamp

    result = {**stamp(), "command": COMMAND, "rounding": rounding(), "accuracy": accuracy()}
    result["rows"] = power(args.rounds, args.seconds)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
