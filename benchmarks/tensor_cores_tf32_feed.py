"""What feeding the MMAs costs the persistent TF32 mma.sync kernels, part by part (chapter 9).

Two kernels (``MmaTf32Tma`` of kernels/tensor_cores.cu, 128 x 256 tiles, persistent): ``feed_*``, the
one with a producer warpgroup (tc_v6w_tf32_128x256_s4_producer_persistent), and ``thread0_*``, the
one whose thread 0 of consumer warp 0 asks the TMA for the tiles between its own MMAs
(tc_v6w_tf32_128x256_s4_persistent). Each is compiled again with parts of its work switched off, and
every variant is timed in one run beside cuBLAS TF32 on the same layout (B^T given), at 4096^3 and at
a shape of whole waves (4224 x 4096 x 4096: 528 tiles of 128 x 256 = 4 waves on 132 SMs, the same work
per SM as 4096^3 would have without its last wave's 16 idle SMs). Wall-clock times here move with the
board's power state from round to round; tools/device_tensor_cores_ncu.sh (part feed) profiles one
launch of each, and its cycles and tensor-pipe use are what the chapter reads. The variants:

    all           the kernel as the course runs it
    no_store      C is not written (the epilogue's cost)
    no_data       no TMA and no waits for tiles: the consumers read whatever shared memory holds
    no_data_ldsm  and no ldmatrix in the loop: the MMAs on fragments loaded once (the loop's own cost)
    data_only     the TMA and the waits, no ldmatrix and no MMA: how fast the tiles can arrive
    full_waves    ``all`` at 4224 x 4096 x 4096

The switches are text edits of the kernel's source made here (each must match exactly once, or this
script stops and names the line that changed); the course's own module is not touched. Outputs of
the variants without data or MMAs are meaningless; ``all`` is checked against float64.

    python benchmarks/tensor_cores_tf32_feed.py [--out FILE.json]      (on a GPU with sm_90a)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

KERNEL = "tc_v6w_tf32_128x256_s4_producer_persistent"
#: kernel-name prefix -> PRODUCER (a producer warpgroup, 384 threads) or not (thread 0 issues, 256 threads)
DESIGNS = {"feed": True, "thread0": False}
# bits of the PARTS template parameter the edits add: 1 no TMA/waits, 2 no ldmatrix in the loop, 4 no MMA, 8 no store
VARIANTS = {"all": 0, "no_store": 8, "no_data": 1, "no_data_ldsm": 3, "data_only": 6, "full_waves": 0}
FULL_WAVES_M = 4224


def edited_source(text: str) -> str:
    """tensor_cores.cu with a PARTS template parameter on MmaTf32Tma and the switches it reads."""
    def sub(old: str, new: str) -> None:
        nonlocal text
        if text.count(old) != 1:
            raise SystemExit(f"tensor_cores.cu changed: expected this once, found it {text.count(old)} times:\n{old}")
        text = text.replace(old, new)
    sub("          bool PRODUCER = false, bool STAGED_C = false, bool EARLY_RELEASE = false, bool MMA_FIRST = false>\n"
        "struct MmaTf32Tma {",
        "          bool PRODUCER = false, bool STAGED_C = false, bool EARLY_RELEASE = false, bool MMA_FIRST = false,\n"
        "          int PARTS = 0>\nstruct MmaTf32Tma {")
    sub("        if constexpr (ISSUE_ONLY) {                           // the producer: every k-tile, as soon as its slot is free\n"
        "            if (sched.units > 0) {",
        "        if constexpr (ISSUE_ONLY) {\n            if (!(PARTS & 1) && sched.units > 0) {")
    sub("        } else if (!PRODUCER && threadIdx.x == 0) {", "        } else if (!PRODUCER && !(PARTS & 1) && threadIdx.x == 0) {")
    sub("if (!PRODUCER && threadIdx.x == 0 && ig < total) issue_next();",
        "if (!PRODUCER && !(PARTS & 1) && threadIdx.x == 0 && ig < total) issue_next();")
    sub("            mbar_wait(full, 0);\n            Bt::load_a_frags(f[0], base, offsets, 0);",
        "            if (!(PARTS & 1)) mbar_wait(full, 0);\n            Bt::load_a_frags(f[0], base, offsets, 0);")
    sub("                        if (!MMA_FIRST) mbar_wait(full + 8 * ns, ((g + 1) / STAGES) & 1);",
        "                        if (!MMA_FIRST && !(PARTS & 1)) mbar_wait(full + 8 * ns, ((g + 1) / STAGES) & 1);")
    for call in ("Bt::load_a_frags(next, sa, offsets, kk + 1);", "if (!B_LATE) Bt::load_b_frags(next, sb, offsets, kk + 1);",
                 "Bt::load_a_frags(next, na, offsets, 0);", "if (!B_LATE) Bt::load_b_frags(next, nb, offsets, 0);"):
        # (the newline pins the indentation: MMA_FIRST's branch, deeper, loads the same fragments)
        sub("\n                        " + call + "\n", "\n                        if (!(PARTS & 2)) { " + call + " }\n")
    # without MMAs the fragments still feed something (an xor), or the compiler drops the ldmatrix too
    sub("                    Bt::mma_all(acc, f[kk & 1]);\n",
        "                    if (!(PARTS & 4)) Bt::mma_all(acc, f[(PARTS & 2) ? 0 : (kk & 1)]);\n"
        "                    else if (!(PARTS & 2)) {\n"
        "                        u32 x = 0;\n"
        "                        for (int i = 0; i < Bt::MT; ++i) for (int e = 0; e < 4; ++e) x ^= f[kk & 1].a[i][e];\n"
        "                        for (int j = 0; j < Bt::NT; ++j) for (int e = 0; e < 2; ++e) x ^= f[kk & 1].b[j][e];\n"
        "                        acc[0][0][0] += __uint_as_float(x & 1);\n"
        "                    }\n")
    # no store: C written only when M < 0 (never), so the compiler keeps the work that feeds it
    sub("            if constexpr (STAGED_C) store_staged(",
        "            if ((PARTS & 8) && M >= 0) {} else if constexpr (STAGED_C) store_staged(")
    for prefix, producer in DESIGNS.items():
        for name, parts in VARIANTS.items():                  # full_waves: the kernel as it is, named for its shape
            text += (f'\nextern "C" __global__ void __launch_bounds__({384 if producer else 256}, 1) {prefix}_{name}('
                     f'const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_bt, '
                     f'float* __restrict__ C, int M, int N, int K)\n'
                     f'{{ V6W_BODY((MmaTf32Tma<128, 256, 4, 8, false, true, false, 1, 0, {str(producer).lower()}, false, false, false, {parts}>'
                     f'::run(&tma_a, &tma_bt, C, M, N, K))); }}\n')
    return text


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (the best of each variant's is kept)")
    ap.add_argument("--warmup", type=int, default=1, help="launches before each variant's timing")
    ap.add_argument("--repeats", type=int, default=7, help="timed batches a round (their median is the round's time)")
    ap.add_argument("--batch-ms", type=float, default=10.0, help="GPU time a batch (0: one launch)")
    args = ap.parse_args(argv)

    import cupy

    from simtlab.gpubench import tensor_cores as G
    from simtlab.gpubench.harness import time_launches
    from simtlab.kernels import tensor_cores as T

    t0 = time.time()
    cubin, log, _tool = G._nvrtc_cubin(edited_source(T.CU_PATH.read_text()), "tensor_cores_feed.cu", G.CUBIN_OPTIONS)
    print(f"compiled in {time.time() - t0:.0f} s; ptxas: "
          + ", ".join(f"{k[5:]} {v.get('registers')} regs" for k, v in sorted(G.resource_usage(log).items()) if k.startswith("feed_")))
    path = Path(tempfile.mkdtemp()) / "feed.cubin"
    path.write_bytes(cubin)
    mod = cupy.RawModule(path=str(path))
    version = T.find(KERNEL)                                  # both designs: its tile, tensor maps and grid
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    runs, shapes, keep, operands = {}, {}, [], {}
    for m in (4096, FULL_WAVES_M):                            # the inputs, once per shape
        _a32, _b32, a, b = G.device_inputs((m, 4096, 4096), "tf32", seed=0)
        bt = cupy.ascontiguousarray(b.T)
        operands[m] = (a, b, bt, (G.tensor_map(a, version.tma_boxes[0]), G.tensor_map(bt, version.tma_boxes[1])))
    for prefix, producer in DESIGNS.items():
        for name, parts in VARIANTS.items():
            m, n, k = (FULL_WAVES_M if name == "full_waves" else 4096), 4096, 4096
            a, b, bt, maps = operands[m]
            c = cupy.zeros((m, n), cupy.float32)
            grid, _block, smem = T.launch_config(version, m, n, k, sms=sms)
            block = (384 if producer else 256,)
            kern = mod.get_function(f"{prefix}_{name}")
            kern.max_dynamic_shared_size_bytes = smem
            sizes = tuple(np.int32(x) for x in (m, n, k))
            key = f"{prefix}_{name}"
            runs[key] = lambda kern=kern, grid=grid, block=block, smem=smem, maps=maps, c=c, sizes=sizes: \
                G.launch_with_tensor_maps(kern, grid, block, smem, maps, c, sizes)
            shapes[key] = (m, n, k)
            keep.append(c)
            if name == "all":                                 # the edited kernel still multiplies: against float64
                runs[key]()
                want = a.astype(cupy.float64) @ b.astype(cupy.float64)
                scale = cupy.abs(a).astype(cupy.float64) @ cupy.abs(b).astype(cupy.float64)
                err = float(cupy.max(cupy.abs(c - want) / scale))
                assert err <= T.tolerance("tf32", k), f"{key}: relative error {err:.3g}"
    a, b, bt, maps = operands[4096]
    c_ref = cupy.zeros((4096, 4096), cupy.float32)
    runs["cublas_bt"] = G.cublas_runner("tf32", a, bt, c_ref, b_transposed=True)
    shapes["cublas_bt"] = (4096, 4096, 4096)
    keep.append(c_ref)

    times = {name: [] for name in runs}
    for _ in range(args.rounds):                              # interleaved: clock drift falls on every variant alike
        for name, run in runs.items():
            times[name].append(time_launches(run, warmup=args.warmup, repeat=args.repeats,
                                             batch_ms=args.batch_ms)["median_ms"])
    rows = {}
    for name, ts in times.items():
        m, n, k = shapes[name]
        ms = min(ts)
        rows[name] = {"ms": ms, "tflops": 2.0 * m * n * k / (ms * 1e-3) / 1e12, "shape": [m, n, k], "rounds_ms": ts}
    ref = rows["cublas_bt"]["tflops"]
    for name, r in rows.items():
        r["of_cublas"] = r["tflops"] / ref
        print(f"{name:22s} {r['ms'] * 1e3:8.1f} us  {r['tflops']:7.1f} TFLOP/s (as if it did the GEMM)  "
              f"{100 * r['of_cublas']:5.1f} % of cuBLAS TF32 on B^T")
    props = cupy.cuda.runtime.getDeviceProperties(0)
    result = {"device": props["name"].decode(), "date": time.strftime("%Y-%m-%d"), "designs": DESIGNS,
              "command": "python benchmarks/tensor_cores_tf32_feed.py", "variants": VARIANTS, "rows": rows}
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
