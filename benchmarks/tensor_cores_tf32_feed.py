"""What feeding the MMAs costs the persistent TF32 mma.sync kernels, part by part (chapter 9).

Kernels of ``MmaTf32Tma`` (kernels/tensor_cores.cu), persistent, by design (``--designs``): ``feed_*``, the
128 x 256 one with a producer warpgroup (tc_v6w_tf32_128x256_s4_producer_persistent), ``thread0_*``, the
one whose thread 0 of consumer warp 0 asks the TMA for the tiles between its own MMAs
(tc_v6w_tf32_128x256_s4_persistent), and ``best_*``, the course's fastest (256 x 128, a producer, C staged,
slots released early, the last MMAs first: tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst).
Each is compiled again with parts of its work switched off, and every variant is timed in one run beside
cuBLAS TF32 on the same layout (B^T given), at 4096^3 and at a shape of whole waves (528 tiles = 4 waves on
132 SMs, the same work per SM as 4096^3 would have without its last wave's 16 idle SMs: 4224 x 4096 x 4096
for 128 x 256 tiles, 4096 x 4224 x 4096 for 256 x 128). Wall-clock times here move with the board's power
state from round to round; tools/device_tensor_cores_ncu.sh (part feed) profiles one launch of each, and
its cycles and tensor-pipe use are what the chapter reads. ``--power-seconds S`` runs each variant back
to back for S seconds instead, twice in opposite orders, with nvidia-smi sampling the clock and the
power (benchmarks/tensor_cores_power.py): what each part costs at the board's power limit. The variants:

    all           the kernel as the course runs it
    no_store      C is not written (the epilogue's cost)
    no_data       no TMA and no waits for tiles: the consumers fill the ring once with values like the
                  inputs' (uniform in [-1, 1)) and multiply those
    no_data_ldsm  and no ldmatrix in the loop: the MMAs on fragments loaded once (the loop's own cost)
    data_only     the TMA and the waits, no ldmatrix and no MMA: how fast the tiles can arrive
    full_waves    ``all`` on 4 whole waves of tiles

The switches are text edits of the kernel's source made here (each must match exactly once, or this
script stops and names the line that changed); the course's own module is not touched. Outputs of
the variants without data or MMAs are meaningless; ``all`` is checked against float64.

    python benchmarks/tensor_cores_tf32_feed.py [--designs feed,thread0,best] [--power-seconds 3] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: kernel-name prefix -> the course's kernel it copies (its tile, tensor maps and grid), MmaTf32Tma's template
#: arguments before PARTS, PRODUCER (a producer warpgroup, 384 threads, or thread 0 issues, 256), the whole-wave shape
DESIGNS = {
    "feed": ("tc_v6w_tf32_128x256_s4_producer_persistent", "128, 256, 4, 8, false, true, false, 1, 0, true, false, false, false, false",
             True, (4224, 4096, 4096)),
    "thread0": ("tc_v6w_tf32_128x256_s4_persistent", "128, 256, 4, 8, false, true, false, 1, 0, false, false, false, false, false",
                False, (4224, 4096, 4096)),
    "best": ("tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst",
             "256, 128, 4, 8, false, true, false, 1, 0, true, true, true, true, false", True, (4096, 4224, 4096)),
}
# bits of the PARTS template parameter the edits add: 1 no TMA/waits, 2 no ldmatrix in the loop, 4 no MMA, 8 no store
VARIANTS = {"all": 0, "no_store": 8, "no_data": 1, "no_data_ldsm": 3, "data_only": 6, "full_waves": 0}


def edited_source(text: str) -> str:
    """tensor_cores.cu with a PARTS template parameter on MmaTf32Tma and the switches it reads, and the variants'
    kernels in place of the course's macro-made ones (those are not compiled again: a minute of NVRTC saved)."""
    text = re.sub(r"^\w+_KERNEL\(tc_\w+,.*\n", "", text, flags=re.M)
    def sub(old: str, new: str) -> None:
        nonlocal text
        if text.count(old) != 1:
            raise SystemExit(f"tensor_cores.cu changed: expected this once, found it {text.count(old)} times:\n{old}")
        text = text.replace(old, new)
    sub("          bool SNAKE = false>\nstruct MmaTf32Tma {", "          bool SNAKE = false, int PARTS = 0>\nstruct MmaTf32Tma {")
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
    # MMA_FIRST's branch (a late k-tile: its MMAs first, then the wait and the loads): never taken without tiles
    sub("                        if (MMA_FIRST && !mbar_test_wait(", "                        if (MMA_FIRST && !(PARTS & 1) && !mbar_test_wait(")
    sub("                            Bt::mma_all(acc, f[kk & 1]);      // not there yet: multiply first, then wait\n",
        "                            if (!(PARTS & 4)) Bt::mma_all(acc, f[kk & 1]);\n")
    sub("                            Bt::load_a_frags(next, na, offsets, 0);\n                            Bt::load_b_frags(next, nb, offsets, 0);\n"
        "                            continue;",
        "                            if (!(PARTS & 2)) { Bt::load_a_frags(next, na, offsets, 0); Bt::load_b_frags(next, nb, offsets, 0); }\n"
        "                            continue;")
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
    # no tiles: the consumers first fill the ring with values in [-1, 1), as the inputs are (a hash of the word's
    # place and the block), so the MMAs multiply data like the kernel's and not whatever shared memory held
    # (the power an MMA draws depends on its operands); a named barrier of the consumers before they read it
    sub("        const typename Bt::Offsets offsets = Bt::fragment_offsets(wm, wn);\n",
        "        const typename Bt::Offsets offsets = Bt::fragment_offsets(wm, wn);\n"
        "        if constexpr ((PARTS & 1) != 0) {\n"
        "            for (u32 i = threadIdx.x - PRODUCER_THREADS; i < STAGES * STAGE_BYTES / 16; i += THREADS) {\n"
        "                u32 h[4];\n"
        "                for (int e = 0; e < 4; ++e) {\n"
        "                    u32 x = (4 * i + e + 0x9e3779b9u * (blockIdx.x + 1)) * 2654435761u;\n"
        "                    x ^= x >> 15; x *= 2246822519u; x ^= x >> 13;\n"
        "                    h[e] = __float_as_uint(__uint_as_float(0x3f800000u | (x >> 9)) * 2.0f - 3.0f);\n"
        "                }\n"
        "                st_shared_v4(base + 16 * i, make_uint4(h[0], h[1], h[2], h[3]));\n"
        "            }\n"
        "            asm volatile(\"bar.sync 1, %0;\\n\" :: \"r\"(THREADS) : \"memory\");\n"
        "        }\n")
    # no store: C written only when M < 0 (never), so the compiler keeps the work that feeds it
    sub("            if constexpr (STAGED_C) store_staged(",
        "            if ((PARTS & 8) && M >= 0) {} else if constexpr (STAGED_C) store_staged(")
    for prefix, (_kernel, params, producer, _shape) in DESIGNS.items():
        for name, parts in VARIANTS.items():                  # full_waves: the kernel as it is, named for its shape
            text += (f'\nextern "C" __global__ void __launch_bounds__({384 if producer else 256}, 1) {prefix}_{name}('
                     f'const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_bt, '
                     f'float* __restrict__ C, int M, int N, int K)\n'
                     f'{{ V6W_BODY((MmaTf32Tma<{params}, {parts}>::run(&tma_a, &tma_bt, C, M, N, K))); }}\n')
    return text


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--designs", default="feed,thread0", help=f"comma-separated, of {', '.join(DESIGNS)}")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (the best of each variant's is kept)")
    ap.add_argument("--warmup", type=int, default=1, help="launches before each variant's timing")
    ap.add_argument("--repeats", type=int, default=7, help="timed batches a round (their median is the round's time)")
    ap.add_argument("--batch-ms", type=float, default=10.0, help="GPU time a batch (0: one launch)")
    ap.add_argument("--power-seconds", type=float, default=0.0,
                    help="instead: each variant back to back this long, twice in opposite orders, the clock and power sampled")
    args = ap.parse_args(argv)
    designs = args.designs.split(",")
    unknown = [d for d in designs if d not in DESIGNS]
    if unknown:
        ap.error(f"unknown design {', '.join(unknown)}; choose from {', '.join(DESIGNS)}")

    import cupy

    from simtlab.gpubench import tensor_cores as G
    from simtlab.kernels import tensor_cores as T

    t0 = time.time()
    cubin, log, _tool = G._nvrtc_cubin(edited_source(T.CU_PATH.read_text()), "tensor_cores_feed.cu", G.CUBIN_OPTIONS)
    print(f"compiled in {time.time() - t0:.0f} s; ptxas: "
          + ", ".join(f"{k} {v.get('registers')} regs, {v.get('spill_stores')} B spilled"
                      for k, v in sorted(G.resource_usage(log).items()) if k.endswith("_all") and k.split("_")[0] in designs))
    path = Path(tempfile.mkdtemp()) / "feed.cubin"
    path.write_bytes(cubin)
    mod = cupy.RawModule(path=str(path))
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    runs, shapes, keep, operands = {}, {}, [], {}

    def inputs(shape, version):
        """A, B, B^T and their tensor maps for ``version``'s boxes, once per shape and box"""
        key = (shape, version.tma_boxes)
        if key not in operands:
            _a32, _b32, a, b = G.device_inputs(shape, "tf32", seed=0)
            bt = cupy.ascontiguousarray(b.T)
            operands[key] = (a, b, bt, (G.tensor_map(a, version.tma_boxes[0]), G.tensor_map(bt, version.tma_boxes[1])))
        return operands[key]

    for prefix in designs:
        kernel, _params, producer, whole_waves = DESIGNS[prefix]
        version = T.find(kernel)                              # its tile, tensor maps and grid
        for name, parts in VARIANTS.items():
            m, n, k = whole_waves if name == "full_waves" else (4096, 4096, 4096)
            a, b, bt, maps = inputs((m, n, k), version)
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
            if name in ("all", "full_waves"):                 # the edited kernel still multiplies: against float64
                runs[key]()
                want = a.astype(cupy.float64) @ b.astype(cupy.float64)
                scale = cupy.abs(a).astype(cupy.float64) @ cupy.abs(b).astype(cupy.float64)
                err = float(cupy.max(cupy.abs(c - want) / scale))
                assert err <= T.tolerance("tf32", k), f"{key}: relative error {err:.3g}"
    a, b, bt, _maps = inputs((4096, 4096, 4096), T.find(DESIGNS[designs[0]][0]))
    c_ref = cupy.zeros((4096, 4096), cupy.float32)
    runs["cublas_bt"] = G.cublas_runner("tf32", a, bt, c_ref, b_transposed=True)
    shapes["cublas_bt"] = (4096, 4096, 4096)
    keep.append(c_ref)
    props = cupy.cuda.runtime.getDeviceProperties(0)
    result = {"device": props["name"].decode(), "date": time.strftime("%Y-%m-%d"),
              "designs": {d: DESIGNS[d][0] for d in designs}, "variants": VARIANTS,
              "command": "python benchmarks/tensor_cores_tf32_feed.py --designs " + args.designs
                         + (f" --power-seconds {args.power_seconds:g}" if args.power_seconds else "")}
    if args.power_seconds:
        result["power_runs"] = power_runs(runs, shapes, args.power_seconds)
    else:
        result["rows"] = timed_rows(runs, shapes, args)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return result


def timed_rows(runs, shapes, args) -> dict:
    """Each variant's best median over interleaved rounds, as TFLOP/s of the GEMM it stands for."""
    from simtlab.gpubench.harness import time_launches

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
    return rows


def power_runs(runs, shapes, seconds) -> list:
    """Every variant back to back for ``seconds`` (tensor_cores_power.back_to_back), in the order given and then in
    the opposite one, so neither end always runs on a warmer board: per run, one row per variant."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from tensor_cores_power import back_to_back

    out = []
    for order in (list(runs), list(runs)[::-1]):
        rows = {}
        for name in order:
            m, n, k = shapes[name]
            rows[name] = back_to_back(name, runs[name], 2.0 * m * n * k, seconds)
        ref = rows["cublas_bt"]["tflops"]
        for name in runs:
            r = rows[name]
            r["of_cublas"] = r["tflops"] / ref
            print(f"{name:22s} {r['tflops']:7.1f} TFLOP/s (as if it did the GEMM) {100 * r['of_cublas']:5.1f} % of cuBLAS  "
                  f"{r['sm_clock_mhz']} MHz  {r['power_w']} W", flush=True)
        out.append([rows[name] for name in order])
    return out


if __name__ == "__main__":
    main()
