"""Chapter 9's TF32 goal, measured: the TF32 sweep and its Nsight Compute profile (store entry
results.tensor_cores_tf32, written by tools/store_tensor_cores_tf32.py) and what the chapter
prints from them: the arithmetic on a synthetic entry, the recorded entry against its files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simtlab import backend
from simtlab import tensorcores as TC
from script_support import load_script

ROOT = Path(__file__).resolve().parent.parent


def _profile(kernel, us, ghz, pipe, flops=1e12):
    return {"kernel": kernel, "duration_us": us, "clock_ghz": ghz, "pipe_pct": pipe, "flops": flops,
            "stalls": {"wait": 3.0}, "grid": [1, 1, 1], "block": [256, 1, 1]}


#: cuBLAS 1e12 FLOPs in 2500 us = 400 TFLOP/s at 2.0 GHz, pipe 80 %: 250 TFLOP/s per GHz with the pipe full;
#: the best kernel 5000 us = 200 TFLOP/s at 2.5 GHz, pipe 50 %: 160 per GHz
SYNTHETIC = {"device": "a GPU", "date": "2026-01-01", "shape": [8, 8, 8], "command": "a command",
             "best": {"kernel": "tc_best", "name": "best TF32", "tflops": 190.0, "vs_cublas": 0.5},
             "rows": [{"name": "cuBLAS TF32", "precision": "tf32", "impl": "cublas", "tflops": 380.0},
                      {"name": "best TF32", "kernel": "tc_best", "precision": "tf32", "impl": "cuda-c", "tflops": 190.0,
                       "vs_cublas": 0.5, "reference": "cuBLAS TF32"},
                      {"name": "cuBLAS FP16", "precision": "fp16", "impl": "cublas", "tflops": 600.0}],
             "ncu": {"sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_x": _profile("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_x", 2500, 2.0, 80),
                     "tc_best": _profile("tc_best", 5000, 2.5, 50),
                     "mma_peak_tf32": _profile("mma_peak_tf32", 4000, 2.5, 62.5)}}


def test_the_pipe_use_the_goal_needs_follows_from_the_profiles():
    g = TC.tf32_gap(SYNTHETIC)
    assert g["cublas"]["tflops"] == pytest.approx(400.0) and g["best"]["tflops"] == pytest.approx(200.0)
    assert g["mma_full_per_ghz"] == pytest.approx(160.0)                  # 200 / 0.5 / 2.5
    assert g["ceiling_full_per_ghz"] == pytest.approx(160.0)              # 250 / 0.625 / 2.5
    assert g["best_of_cublas"] == pytest.approx(0.5)
    # 70 % of 400 = 280 TFLOP/s at 2.5 GHz and 160 per GHz: the pipe 70 % busy
    assert g["needed_pipe_pct"] == pytest.approx(70.0)


def test_the_summary_and_the_sweep_table_print_the_entry():
    text = TC.tf32_gap_summary(SYNTHETIC)
    assert "- cuBLAS TF32 on B^T: 2500 us at 2.00 GHz, tensor pipe 80 % busy: 400 TFLOP/s" in text
    assert "- tc_best: 5000 us at 2.50 GHz, tensor pipe 50 % busy: 200 TFLOP/s, 50 % of cuBLAS" in text
    assert "70 % of cuBLAS (280 TFLOP/s) needs the pipe 70 % busy; tc_best keeps it 50 % busy." in text
    table = TC.tf32_sweep_text(SYNTHETIC).splitlines()
    assert len(table) == 4 and "FP16" not in "\n".join(table)           # TF32 rows only, after two header lines
    assert table[3].startswith("best TF32") and table[3].endswith("190.0  50.0%  cuBLAS TF32")


def test_a_missing_profile_is_named():
    entry = {**SYNTHETIC, "ncu": {k: v for k, v in SYNTHETIC["ncu"].items() if k != "mma_peak_tf32"}}
    with pytest.raises(KeyError, match="mma_peak_tf32"):
        TC.tf32_gap(entry)


def _store_tool():
    return load_script("tools/store_tensor_cores_tf32.py")


def test_the_recorded_entry_is_the_tool_s_copy_of_the_result_files():
    assert backend.recorded("tensor_cores_tf32") == json.loads(json.dumps(_store_tool().entry_from_files()))


def test_the_ncu_reader_finds_every_profiled_kernel_with_its_clock_and_pipe():
    profiles = _store_tool().first_per_kernel(_store_tool().parse_ncu(
        (ROOT / "benchmarks/results/ncu_tensor_cores_h100.txt").read_text()))
    assert {"tc_v6t_tf32_128x256x32_w64x64_s3_b1_bt", "tc_v6w_tf32_256x128_s4"} <= set(profiles)
    assert any(k.startswith("sm90_xmma_gemm_f32f32_tf32f32_f32_tn") for k in profiles)
    for p in profiles.values():
        assert 1.0 < p["clock_ghz"] < 2.1 and 50 < p["pipe_pct"] <= 100 and p["duration_us"] > 100
        assert {"wait", "barrier", "long_scoreboard"} <= set(p["stalls"])


def test_the_recorded_gap_is_the_one_the_chapter_states():
    g = TC.tf32_gap()
    entry = backend.recorded("tensor_cores_tf32")
    profiled = [r["kernel"] for r in entry["rows"] if r.get("kernel") in entry["ncu"] and r["impl"] == "cuda-c"
                and "transpose" not in r["name"]]
    # the fastest under the profiler (its median of 4 launches), not the sweep's fastest row
    assert g["best"]["kernel"] == min(profiled, key=lambda k: entry["ncu"][k]["duration_us"])
    # what the chapter's prose says of the recorded run: the goal needs more pipe use than the best
    # kernel has (88 against 90 %), more than mma_peak's one warp per scheduler reaches, less than two
    # warps per scheduler do; mma.sync's full-pipe rate agrees between the best kernel and mma_peak
    assert 87.5 < g["best"]["pipe_pct"] < 88.5 and 89.5 < g["needed_pipe_pct"] < 90.5 and g["best"]["launches"] == 4
    assert g["best"]["pipe_pct"] < g["ceiling"]["pipe_pct"] < g["needed_pipe_pct"] < g["two_warps"]["pipe_pct"]
    assert g["two_warps"]["pipe_pct"] > 99.5
    assert g["mma_full_per_ghz"] == pytest.approx(g["ceiling_full_per_ghz"], rel=0.02)
    assert g["cublas"]["clock_ghz"] < g["best"]["clock_ghz"] < g["ceiling"]["clock_ghz"]
    assert g["best"]["kernel"] == "tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst"
    assert TC.tf32_best()["kernel"] == "tc_v6w_tf32_256x128_s4_producer_persistent"          # the sweep's best row


def test_the_goal_check_takes_the_best_recorded_tf32_run():
    """The sweep's best row (69.9 %) beats the chapter run's v6; the TF32-tensor-map pair's median at 700 W beats both
    and reaches the goal."""
    tf32, reached = next((frac, ok) for goal, frac, ok in TC.goals(TC.recorded()) if goal.startswith("TF32"))
    rn = TC.tf32_tma_rounding()["run"]["rows"]["clusters of 2, TF32 maps"]
    assert tf32 == rn["median"] > TC.tf32_best()["vs_cublas"] > TC.recorded()["best"]["tf32"]["vs_cublas"]
    assert reached and rn["low"] >= 0.70 > TC.tf32_best()["vs_cublas"]


def test_the_source_profile_says_how_often_warps_wait_for_a_tile():
    tool = _store_tool()
    sampled = tool.parse_source(tool.SOURCE.read_text())
    base, last = sampled["tc_v6w_tf32_256x128_s4"], sampled["tc_v6w_tf32_256x128_s4_last"]
    assert base["samples"] > 10000 and abs(sum(base["reasons"].values()) - 1) < 0.01
    # what the chapter says: refilling a k-tile earlier cuts the waits for a tile (11 % -> 4 %)
    assert 0.08 < base["tile_wait"] < 0.14 and last["tile_wait"] < base["tile_wait"] / 2


def _power_rows(rate, clock, watts):
    return [{"name": "cublas:tf32:bt", "tflops": 400.0 * rate, "sm_clock_mhz": 1400 * clock, "power_w": watts,
             "power_limit_w": 700.0},
            {"name": "tc_v6w_tf32_x", "tflops": 200.0 * rate, "sm_clock_mhz": 1600 * clock, "power_w": watts,
             "power_limit_w": 700.0}]


POWER = {"power": {"device": "a GPU", "date": "2026-01-01", "rows": _power_rows(1.0, 1.0, 699.0)},
         "power_short": {"device": "a GPU", "date": "2026-01-01", "rows": _power_rows(0.99, 1.10, 550.0)}}


def test_the_two_power_runs_compare_rates_and_clocks():
    w = TC.tf32_power(POWER)
    assert [r["name"] for r in w["rows"]] == ["cublas:tf32:bt", "tc_v6w_tf32_x"]
    assert w["rate_change"] == pytest.approx(0.01) and w["clock_change"] == pytest.approx(0.10)
    assert w["long_at_limit"] and w["short_below_limit"]
    text = TC.tf32_power_summary(POWER)
    assert "- tc_v6w_tf32_x" in text and "1600 MHz  699 W |  198.0 TFLOP/s  1760 MHz  550 W" in text
    assert w["clock_lower_long"] and w["faster_long"] == 2
    assert text.endswith("3 s: every kernel at the 700 W limit; 1 s: every kernel below it. "
                         "Clocks differ by up to 10 % between the runs, rates by at most 1 %; every kernel's clock "
                         "is lower in the 3-s run, and 2 of 2 run faster there.")


def test_the_recorded_power_runs_are_what_the_chapter_says():
    w = TC.tf32_power()
    # the chapter: at the limit in the 3-s run, below it in the 1-s run; in the 3-s run every clock lower
    # and yet most kernels faster: the clock does not set the rate; the course's kernels at a higher
    # clock than cuBLAS
    assert w["long_at_limit"] and w["short_below_limit"] and w["rate_change"] < w["clock_change"]
    # (in the recorded run one kernel's clock was 15 MHz higher in the 3-s run, two the same; every rate higher)
    clocks = [(r["long"]["clock_mhz"], r["short"]["clock_mhz"]) for r in w["rows"]]
    assert sum(long > short for long, short in clocks) == 1 and sum(long == short for long, short in clocks) == 2
    assert not w["clock_lower_long"] and w["faster_long"] == len(w["rows"])
    rows = {r["name"]: r["long"] for r in w["rows"]}
    assert rows["tc_v6w_tf32_256x128_s4"]["clock_mhz"] > rows["cublas:tf32:bt"]["clock_mhz"]


# --- stream-K: the last wave split by k-tiles ------------------------------------------------------
def test_wave_quantization_counts_the_idle_part_of_the_last_round():
    q = TC.wave_quantization(4096, 4096, 128, 256, sms=132)
    assert (q["tiles"], q["rounds"]) == (512, 4) and q["last_fill"] == pytest.approx(116 / 132)
    assert q["ideal_saving"] == pytest.approx(1 - 512 / 528)                # 16 of 528 tile slots idle
    assert TC.wave_quantization(1024, 1024, 128, 128, sms=64)["ideal_saving"] == 0     # 64 tiles, one whole wave
    assert TC.wave_quantization(128, 128, 128, 128, sms=4)["last_fill"] == pytest.approx(0.25)
    with pytest.raises(ValueError, match="whole 128 x 256 tiles"):
        TC.wave_quantization(4096, 4000, 128, 256)


def _stream_k_entry():
    rows = [{"name": label, "kernel": kernel, "precision": "tf32", "impl": "cuda-c", "tflops": 200.0 - 10 * i,
             "vs_cublas": 0.6 - 0.03 * i, "reference": "cuBLAS TF32, B^T given"}
            for i, (kernel, label) in enumerate(TC.STREAM_K_KERNELS.items())]
    profiles = {kernel: {"kernel": kernel, "duration_us": 500.0 + 50 * i, "dram_read_mb": 300.0 * (i + 1),
                         "l2_hit_pct": 80.0 - 10 * i, "tensor_pipe_pct": 75.0 - 5 * i, "clock_ghz": 1.8,
                         "grid": [132, 1, 1]}
                for i, kernel in enumerate(TC.STREAM_K_KERNELS)}
    sampled = {"tc_v6w_tf32_128x256_s4_persistent": {"samples": 1000.0, "opcodes": {"HMMA": 0.6}},
               "tc_v6w_tf32_128x256_s4_streamk": {"samples": 1100.0, "opcodes": {"HMMA": 0.5, "FADD": 0.04}}}
    return {"device": "a GPU", "date": "2026-01-01", "shape": [4096, 4096, 4096], "rows": rows, "stream_k": profiles,
            "stream_k_sampled": sampled}


def test_the_stream_k_summary_prints_each_kernel_s_profile_and_rate():
    w = TC.tf32_stream_k(_stream_k_entry())
    assert [r["kernel"] for r in w["rows"]] == list(TC.STREAM_K_KERNELS)
    assert w["rows"][2]["dram_read_mb"] == 900.0 and w["rows"][1]["tflops"] == 190.0
    text = TC.tf32_stream_k_summary(_stream_k_entry()).splitlines()
    assert text[0] == ("512 tiles of 128 x 256 on 132 SMs: 3.88 waves in 4 rounds, the last 88 % full; "
                       "a perfect split would save 3.0 % of the time.")
    assert text[3] == ("- stream-K, each share's second tile first    550 us  DRAM read  600 MB  L2 hits  70 %  "
                       "tensor pipe  70 %  | 190.0 TFLOP/s, 57.0 % of cuBLAS")
    assert w["samples_ratio"] == pytest.approx(1.1) and w["fix_up_add_share"] == 0.04
    assert text[-1] == ("Stall samples per instruction: stream-K 1.10x the persistent kernel's; 4.0 % of them at the "
                        "fix-up's additions, waiting for partial sums from L2.")
    missing = {**_stream_k_entry(), "stream_k": {}}
    with pytest.raises(KeyError, match="tc_v6w_tf32_128x256_s4_persistent"):
        TC.tf32_stream_k(missing)


def test_the_recorded_stream_k_runs_are_what_the_chapter_says():
    w = TC.tf32_stream_k()
    persistent, second_first, in_order = w["rows"]
    # walked in order, the tail reads far more from DRAM (over twice) and hits L2 less; walked from
    # each share's second tile, it reads about what the persistent kernel reads (within 10 %)
    assert in_order["dram_read_mb"] > 2 * second_first["dram_read_mb"]
    assert second_first["dram_read_mb"] < 1.1 * persistent["dram_read_mb"]
    assert in_order["l2_hit_pct"] < second_first["l2_hit_pct"] < persistent["l2_hit_pct"]
    # and neither beats the persistent kernel, under the profiler or in the sweep
    assert persistent["duration_us"] < second_first["duration_us"] < in_order["duration_us"]
    assert persistent["tflops"] > second_first["tflops"] > in_order["tflops"]
    # even a perfect split of the last wave would leave this kernel short of the goal; the producer kernel's
    # rate (the same tiles' count on the same SMs) would pass it, if splitting cost nothing
    assert persistent["vs_cublas"] / (1 - w["quantization"]["ideal_saving"]) < 0.70
    assert TC.tf32_best()["vs_cublas"] / (1 - w["quantization"]["ideal_saving"]) > 0.70
    # sampled per instruction: stream-K spends more, a few % of it at the fix-up's adds
    assert w["samples_ratio"] > 1.05 and 0.02 < w["fix_up_add_share"] < 0.05


def test_the_shared_memory_summary_prints_each_kernel():
    entry = {"shared_memory": {"tc_a": {"tensor_pipe_pct": 75.4, "bank_reads_pct": 25.0, "bank_writes_pct": 9.6,
                                        "shared_lsu_pct": 50.2, "duration_us": 570.0},
                               "sm90_xmma_gemm_" + "x" * 40: {"tensor_pipe_pct": 89.0, "bank_reads_pct": 28.0,
                                                              "bank_writes_pct": 17.0, "shared_lsu_pct": 58.0,
                                                              "duration_us": 340.0}}}
    rows = TC.tf32_shared_memory(entry)
    assert [r["shared_lsu_pct"] for r in rows] == [50.2, 58.0]
    text = TC.tf32_shared_memory_summary(entry).splitlines()
    assert text[1] == "tc_a                                              75 %       25 %        10 %       50 %"
    assert text[2].startswith("sm90_xmma_gemm_xxxxxxxxxxxxxxxxxxxxxxxx...") and len(text) == 3
    with pytest.raises(KeyError, match="smem"):
        TC.tf32_shared_memory({"shared_memory": {}})


def test_the_recorded_shared_memory_use_is_what_the_chapter_says():
    rows = {r["kernel"]: r for r in TC.tf32_shared_memory()}
    cublas = next(r for k, r in rows.items() if k.startswith("sm90_xmma_gemm_f32f32_tf32f32_f32_tn"))
    ours = [r for k, r in rows.items() if k.startswith("tc_")]
    # the chapter: cuBLAS keeps its banks busier than any course kernel and its tensor pipe far busier;
    # no course kernel uses much over half of what shared memory can do
    assert len(ours) == 3 and all(r["shared_lsu_pct"] < cublas["shared_lsu_pct"] < 60 for r in ours)
    assert all(r["bank_writes_pct"] < cublas["bank_writes_pct"] and r["tensor_pipe_pct"] < 80 for r in ours)
    assert cublas["tensor_pipe_pct"] > 85


def test_the_recorded_sweep_rows_are_what_the_chapter_says():
    rows = {r["kernel"]: r["vs_cublas"] for r in backend.recorded("tensor_cores_tf32")["rows"]
            if r.get("kernel") and "transpose" not in r["name"]}
    v6t = {shape: rows[f"tc_v6t_tf32_{shape}x32_w64x64_s3_b1_bt"] for shape in ("128x256", "256x128")}
    v6w = {shape: rows[f"tc_v6w_tf32_{shape}_s4"] for shape in ("128x256", "256x128")}
    # what the chapter claims of a single run stays within a run's spread (1-3 points): v6w within 2 points of v6t;
    # the persistent kernel no faster than one block a tile; clusters of 2 within 2 points of the same tile without
    assert all(abs(v6w[shape] - v6t[shape]) < 0.02 for shape in v6t)
    assert rows["tc_v6w_tf32_128x256_s4_persistent"] < v6w["128x256"] + 0.01
    assert abs(rows["tc_v6w_tf32_128x256_s4_cluster2"] - v6w["128x256"]) < 0.02
    earlier = (ROOT / "benchmarks/results/tensor_cores_tf32_cluster_h100.txt").read_text()
    assert "v6w sweep 128x256_s4_cluster2 TF32" in earlier and "64.7%" in earlier and "64.8%" in earlier
    # a producer warpgroup: 11 % fewer cycles under the profiler than the same persistent kernel whose thread 0
    # asks; groups of 4 tile rows no fewer than groups of 8; the sweep's best row the producer at 256 x 128 (69.9 %)
    ncu = backend.recorded("tensor_cores_tf32")["ncu"]
    cycles = {k: ncu[k]["cycles"] for k in ("tc_v6w_tf32_128x256_s4_persistent", "tc_v6w_tf32_128x256_s4_producer_persistent",
                                            "tc_v6w_tf32_128x256_s4_group4_producer_persistent")}
    assert 0.10 < 1 - cycles["tc_v6w_tf32_128x256_s4_producer_persistent"] / cycles["tc_v6w_tf32_128x256_s4_persistent"] < 0.12
    assert abs(cycles["tc_v6w_tf32_128x256_s4_group4_producer_persistent"] / cycles["tc_v6w_tf32_128x256_s4_producer_persistent"] - 1) < 0.005
    best = rows["tc_v6w_tf32_256x128_s4_producer_persistent"]
    assert max(rows.values()) == best and 0.685 < best < 0.70


def _feed_entry():
    """A synthetic feed profile: both designs, cycles chosen so each part's cost is a round number."""
    cycles = {"no_data_ldsm": 1000.0, "no_data": 1050.0, "no_store": 1260.0, "all": 1323.0, "full_waves": 1050.0,
              "data_only": 600.0}
    feed = {}
    for design, tiles in (("thread0", 1.2), ("feed", 1.0)):
        for part, c in cycles.items():
            c = c * tiles if part in ("no_store", "all", "full_waves") else c
            feed[f"{design}_{part}"] = {"cycles": c, "tensor_pipe_pct": 0.0 if part == "data_only" else 90.0,
                                        "clock_ghz": 1.8}
    return {"device": "a GPU", "date": "2026-01-01", "feed": feed,
            "feed_shapes": {p: [4200 if p == "full_waves" else 4000, 10, 10] for p in cycles}}


def test_the_feed_costs_are_each_part_s_extra_cycles():
    w = TC.tf32_feed(_feed_entry())
    thread0, producer = w["designs"]["thread0"]["costs"], w["designs"]["feed"]["costs"]
    assert producer["ldmatrix"] == pytest.approx(0.05) and thread0["ldmatrix"] == pytest.approx(0.05)
    assert thread0["tiles"] == pytest.approx(1260 * 1.2 / 1050 - 1) and producer["tiles"] == pytest.approx(0.2)
    assert producer["store"] == pytest.approx(1323 / 1260 - 1)
    # the whole-waves run did 5 % more work (4200 rows against 4000) in 1050 cycles: 1000 for the same work
    assert producer["last_wave"] == pytest.approx(1323 / 1000 - 1)
    text = TC.tf32_feed_summary(_feed_entry()).splitlines()
    assert "thread 0 of warp 0 asks" in text[1] and "a producer warpgroup asks" in text[1]
    assert text[2].startswith("MMAs alone (no tiles, no ldmatrix)") and text[2].split()[-6:] == ["1k", "90.0", "%"] * 2
    assert any(line.startswith("the kernel on 4200 rows (4 whole waves)") for line in text)
    assert text[-4].startswith("cost of ldmatrix") and text[-4].split()[-4:] == ["5.0", "%", "5.0", "%"]
    with pytest.raises(KeyError, match="thread0_no_data_ldsm"):
        TC.tf32_feed({**_feed_entry(), "feed": {}})


def test_the_recorded_feed_is_what_the_chapter_says():
    w = TC.tf32_feed()
    thread0, producer = w["designs"]["thread0"], w["designs"]["feed"]
    for d in (thread0, producer):
        # the MMAs alone keep the pipe about 93 % busy; ldmatrix costs 4-5 %, the store and the last wave about 3 %
        assert 92.5 < d["rows"]["no_data_ldsm"]["pipe_pct"] < 93.5
        assert 0.04 < d["costs"]["ldmatrix"] < 0.0505 and 0.03 < d["costs"]["store"] < 0.036
        assert 0.03 < d["costs"]["last_wave"] < 0.036
        # the tiles alone arrive in fewer cycles than the kernel takes without them
        assert d["rows"]["data_only"]["cycles"] < d["rows"]["no_data"]["cycles"]
    # the tiles cost 15 % when a consumer warp asks, 2 % with a producer warpgroup; the kernel's pipe 75 against 85 %
    assert 0.145 < thread0["costs"]["tiles"] < 0.155 and 0.015 < producer["costs"]["tiles"] < 0.025
    assert round(thread0["rows"]["all"]["pipe_pct"]) == 75 and round(producer["rows"]["all"]["pipe_pct"]) == 85
    assert round(thread0["rows"]["data_only"]["cycles"] / 1e3) == 644
    # _last (a consumer warp asks one k-tile earlier) moved the pipe 2 points: 77 to 79 %
    ncu = backend.recorded("tensor_cores_tf32")["ncu"]
    assert round(ncu["tc_v6w_tf32_256x128_s4"]["pipe_pct"]) == 77 and round(ncu["tc_v6w_tf32_256x128_s4_last"]["pipe_pct"]) == 79


def _steps_entry(cycles):
    """A synthetic entry: both producer shapes, each step of PRODUCER_STEPS with the given cycles, store
    instructions halved once C is staged, and sweep rows."""
    ncu, rows = {}, []
    for steps in TC.PRODUCER_STEPS.values():
        for step, kernel in steps.items():
            staged = step != "direct"
            ncu[kernel] = {"cycles": cycles[step], "tensor_pipe_pct": 85.0, "launches": 4,
                           "global_stores": 131072.0 if staged else 262144.0,
                           "stalls": {"lg_throttle": 0.0 if staged else 0.15, "wait": 1.0}}
            rows.append({"name": kernel, "kernel": kernel, "vs_cublas": 0.6, "tflops": 200.0})
    return {"device": "a GPU", "date": "2026-01-01", "ncu": ncu, "rows": rows}


def test_each_producer_step_saves_against_the_one_before():
    entry = _steps_entry({"direct": 1000.0, "staged": 980.0, "early": 970.2, "mma_first": 965.349})
    w = TC.tf32_producer_steps(entry)
    for shape in ("128x256", "256x128"):
        assert set(w["saving"][shape]) == {"staged", "early", "mma_first"}
        assert w["saving"][shape]["staged"] == pytest.approx(0.02) and w["saving"][shape]["early"] == pytest.approx(0.01)
        assert w["saving"][shape]["mma_first"] == pytest.approx(0.005)
    text = TC.tf32_producer_steps_summary(entry)
    assert "median of 4 launches" in text and text.count("   2.0%") == 2 and text.count("   1.0%") == 2
    assert text.count("   0.5%") == 2
    # a profile without the store instructions (an older run of the script) is named, with the command
    del entry["ncu"]["tc_v6w_tf32_256x128_s4_producer_persistent_staged_early"]["global_stores"]
    with pytest.raises(KeyError, match="ncu.sh producer"):
        TC.tf32_producer_steps(entry)


def test_the_recorded_producer_steps_are_what_the_chapter_says():
    w = TC.tf32_producer_steps()
    for shape, steps in w["rows"].items():
        direct, staged, early = steps["direct"], steps["staged"], steps["early"]
        # staging C: 1.3 % fewer cycles, half the store instructions, no LSU-queue stalls left (0.15 before);
        # releasing each slot early: 0.9 % fewer again; the last MMAs first: 0.5 % fewer again; 2.7 % in all
        assert 0.011 < w["saving"][shape]["staged"] < 0.014 and 0.006 < w["saving"][shape]["early"] < 0.01
        assert 0.003 < w["saving"][shape]["mma_first"] < 0.008
        assert 0.025 < 1 - steps["mma_first"]["cycles"] / direct["cycles"] < 0.029
        assert all(r["launches"] == 4 for r in steps.values())
        assert staged["global_stores"] * 2 == direct["global_stores"] == early["global_stores"] * 2
        assert early["lg_throttle"] < 0.01 and staged["lg_throttle"] < 0.01 < 0.1 < direct["lg_throttle"]
        assert direct["tensor_pipe_pct"] < staged["tensor_pipe_pct"] < early["tensor_pipe_pct"] < steps["mma_first"]["tensor_pipe_pct"]


def _l2_entry(alone, cluster):
    """A synthetic entry: the two kernels of L2_KERNELS with (cycles, L2 read sectors, L2 busy %)."""
    ncu = {kernel: {"cycles": c, "l2_read_sectors": r, "l2_throughput_pct": t, "tensor_pipe_pct": 85.0}
           for kernel, (c, r, t) in zip(TC.L2_KERNELS.values(), (alone, cluster))}
    return {"device": "a GPU", "date": "2026-01-01", "ncu": ncu}


def test_the_l2_comparison_is_reads_saved_against_cycles_spent():
    w = TC.tf32_l2(_l2_entry((1000.0, 400.0, 60.0), (1010.0, 300.0, 45.0)))
    assert w["fewer_reads"] == pytest.approx(0.25) and w["more_cycles"] == pytest.approx(0.01)
    assert TC.tf32_l2_summary(_l2_entry((1000.0, 400.0, 60.0), (1010.0, 300.0, 45.0))).endswith(
        "25 % fewer L2 reads, +1.0 % cycles")
    entry = _l2_entry((1000.0, 400.0, 60.0), (1010.0, 300.0, 45.0))
    del entry["ncu"][TC.L2_KERNELS["clusters of 2"]]["l2_read_sectors"]
    with pytest.raises(KeyError, match="ncu.sh producer"):
        TC.tf32_l2(entry)


def test_the_recorded_l2_comparison_is_what_the_chapter_says():
    # clusters of 2 read 28 % less from L2, keep it far less busy, and take 1.2 % more cycles
    w = TC.tf32_l2()
    alone, cluster = w["rows"]["alone"], w["rows"]["clusters of 2"]
    assert 0.25 < w["fewer_reads"] < 0.31 and 0.008 < w["more_cycles"] < 0.016
    assert cluster["l2_throughput_pct"] < alone["l2_throughput_pct"] - 15


def _first_tries(csv_path):
    """Each mbarrier wait site of an ncu source page (--page source --csv): (times its first try_wait ran,
    times the retry after a failed first try ran), in SASS order."""
    import csv

    rows = [r for r in csv.reader(csv_path.open()) if len(r) > 5]
    header = next(r for r in rows if r[0] == "Address")
    source, executed = header.index("Source"), header.index("Instructions Executed")
    body = [r for r in rows if r[0].startswith("0x")]
    sites = []
    for i, r in enumerate(body[:-3]):
        # a wait: try_wait, branch out when it succeeded, (a timer read), the same try_wait again
        if "TRYWAIT" in r[source] and "BRA" in body[i + 1][source] and "TRYWAIT" in body[i + 3][source] \
                and r[source].split()[-2:] == body[i + 3][source].split()[-2:]:
            sites.append((int(r[executed]), int(body[i + 3][executed])))
    return sites


def test_the_recorded_waits_are_what_the_chapter_says():
    sites = _first_tries(ROOT / "benchmarks/results/ncu_source_staged_h100.csv")
    consumers = max(sites, key=lambda s: s[0])       # each consumer warp, each k-tile: 8 x 132 x 3.88 x 128
    producer = [s for s in sites if s != consumers and s[0] > 10000]
    # a consumer finds its k-tile not there at the first look in 19 % of the k-tiles ...
    assert consumers[0] > 500000 and 0.17 < consumers[1] / consumers[0] < 0.21
    # ... while the producer's every wait for a free slot (all but the first 4 of each block) fails its first look
    assert len(producer) == 1 and producer[0][0] == producer[0][1] == 512 * 128 - 4 * 132


def _turns_entry(rates):
    """A synthetic head-to-head: rounds of name -> TFLOP/s, the reference first."""
    rounds = [dict(r) for r in rates]
    names = list(rounds[0])
    per_kernel = {}
    for name in names:
        ratios = [r[name] / r[names[0]] for r in rounds]
        per_kernel[name] = {"tflops": sorted(r[name] for r in rounds)[len(rounds) // 2], "ratio": sorted(ratios)[len(ratios) // 2],
                            "ratio_min": min(ratios), "ratio_max": max(ratios)}
    return {"head_to_head": {"device": "a GPU", "date": "2026-01-01", "reference": names[0], "rounds": rounds,
                             "per_kernel": per_kernel, "command": "..."}}


def test_the_head_to_head_reads_each_kernel_against_the_reference_of_its_round():
    entry = _turns_entry([{"ref": 400.0, "a": 200.0, "b": 300.0}, {"ref": 300.0, "a": 180.0, "b": 210.0},
                          {"ref": 350.0, "a": 175.0, "b": 280.0}])
    w = TC.tf32_head_to_head(entry)
    assert w["rounds"] == 3 and [r["name"] for r in w["rows"]] == ["ref", "a", "b"] and w["best"]["name"] == "b"
    assert w["rows"][1]["ratio_min"] == pytest.approx(0.5) and w["rows"][1]["ratio_max"] == pytest.approx(0.6)
    text = TC.tf32_head_to_head_summary(entry)
    assert text.startswith("In turns, 3 rounds") and text.splitlines()[-1].startswith("ref")
    with pytest.raises(KeyError, match="device_tensor_cores_tf32.sh"):
        TC.tf32_head_to_head({"head_to_head": None})


def test_the_recorded_head_to_head_is_what_the_chapter_says():
    # in turns the steps rank as the profiler ranks them; the best (all three steps at 256 x 128) at 68.6 %
    w = TC.tf32_head_to_head()
    ratio = {r["name"]: r["ratio"] for r in w["rows"]}
    steps = [ratio[k] for k in TC.PRODUCER_STEPS["256x128"].values()]
    assert w["rounds"] == 20 and w["reference"] == "cublas:tf32:bt" and steps == sorted(steps)
    assert w["best"]["name"] == TC.PRODUCER_STEPS["256x128"]["mma_first"] and 0.68 < w["best"]["ratio"] < 0.69
    assert 0.54 < w["best"]["ratio_min"] < 0.56 and 0.73 < w["best"]["ratio_max"] < 0.75


def _clusters_entry(alone, pair, early, cublas=(340.0, 300.0)):
    """A recorded entry of CLUSTER_KERNELS: per label (cycles, L2 read sectors, [(TFLOP/s, MHz) of each power run]),
    both shapes alike."""
    def row(name, tflops, mhz):             # a tensor_cores_power.back_to_back row at the 700 W limit
        return {"name": name, "tflops": tflops, "ms": 137.4 / tflops, "sm_clock_mhz": mhz, "power_w": 700.0,
                "power_limit_w": 700.0}

    ncu, runs = {}, [[row("cublas:tf32:bt", t, 1440.0)] for t in cublas]
    for kernels in TC.CLUSTER_KERNELS.values():
        for kernel, (cycles, reads, power) in zip(kernels.values(), (alone, pair, early)):
            ncu[kernel] = {"cycles": cycles, "l2_read_sectors": reads, "tensor_pipe_pct": 85.0, "clock_ghz": 1.75,
                           "launches": 4}
            for run, (tflops, mhz) in zip(runs, power):
                run.append(row(kernel, tflops, mhz))
    return {"clusters": {"ncu": ncu, "command": "bash tools/device_tensor_cores_clusters.sh",
                         "power": [{"device": "H100", "date": "today", "rows": rows} for rows in runs]}}


def test_the_cluster_comparison_sets_clock_and_rate_gains_against_reads_and_cycles():
    entry = _clusters_entry((1000.0, 400.0, [(230.0, 1500.0), (210.0, 1400.0)]),
                            (1020.0, 300.0, [(234.6, 1575.0), (210.0, 1470.0)]),
                            (1005.0, 296.0, [(241.5, 1560.0), (220.5, 1442.0)]))
    x = TC.tf32_clusters(entry)["shapes"]["128x256"]
    pair, early = x["against"]["clusters of 2"], x["against"]["clusters, early"]
    assert pair["fewer_reads"] == pytest.approx(0.25) and pair["more_cycles"] == pytest.approx(0.02)
    assert pair["clock_gain"] == pytest.approx([0.05, 0.05]) and pair["rate_gain"] == pytest.approx([0.02, 0.0])
    assert early["fewer_reads"] == pytest.approx(0.26) and early["more_cycles"] == pytest.approx(0.005)
    assert early["clock_gain"] == pytest.approx([0.04, 0.03]) and early["rate_gain"] == pytest.approx([0.05, 0.05])
    # each run's rate over that run's cuBLAS
    assert x["rows"]["alone"]["vs_cublas"] == pytest.approx([230 / 340, 210 / 300])
    text = TC.tf32_clusters_summary(entry)
    assert "clusters of 2: 25 % fewer L2 reads, +2.0 % cycles; at 700 W the clock +5.0 / +5.0 %, the rate +2.0 / +0.0 %" in text
    assert "clusters, early: 26 % fewer L2 reads, +0.5 % cycles; at 700 W the clock +4.0 / +3.0 %, the rate +5.0 / +5.0 %" in text
    with pytest.raises(KeyError, match="device_tensor_cores_clusters.sh"):
        TC.tf32_clusters({"clusters": None})


def test_the_recorded_cluster_comparison_is_what_the_chapter_says():
    # clusters of 2: a quarter fewer L2 reads and a 2-5 % higher clock at the 700 W limit in all eight comparisons;
    # released after the MMAs 1.9-2.1 % more cycles and the rate -0.2 to +1.5 %; released early through the
    # producers 0.5-0.8 % more cycles and the rate +0.3 to +1.8 % in all four runs
    w = TC.tf32_clusters()
    assert set(w["shapes"]) == {"256x128", "128x256"}
    for x in w["shapes"].values():
        for g in x["against"].values():
            assert 0.25 <= g["fewer_reads"] < 0.29 and all(0.019 < v < 0.051 for v in g["clock_gain"])
        pair, early = x["against"]["clusters of 2"], x["against"]["clusters, early"]
        assert 0.0185 <= pair["more_cycles"] < 0.0215 and all(-0.0025 < v < 0.0155 for v in pair["rate_gain"])
        assert 0.0045 < early["more_cycles"] < 0.0085 and all(0.0025 < v < 0.0185 for v in early["rate_gain"])
        assert all(v < 0.70 for r in x["rows"].values() for v in r["vs_cublas"])
        # a kernel's two runs at the power limit differ by a point or less
        assert all(abs(r["vs_cublas"][0] - r["vs_cublas"][1]) <= 0.0105 for r in x["rows"].values())
    # the best at the power limit: 256 x 128 in clusters of 2 released early, 69.5 / 68.8 % and 67.8 % in turns,
    # against 68.3 / 67.9 % and 64.4 % alone
    rows = w["shapes"]["256x128"]["rows"]
    best = max((r for x in w["shapes"].values() for r in x["rows"].values()), key=lambda r: sum(r["vs_cublas"]))
    assert best is rows["clusters, early"]
    assert [round(100 * v, 1) for v in best["vs_cublas"]] == [69.5, 68.8] and round(100 * best["turns"], 1) == 67.8
    alone = rows["alone"]
    assert [round(100 * v, 1) for v in alone["vs_cublas"]] == [68.3, 67.9] and round(100 * alone["turns"], 1) == 64.4
    # the turns recorded hours earlier gave the kernel alone 68.6 %
    earlier = {r["name"]: r for r in TC.tf32_head_to_head()["rows"]}
    assert earlier[alone["kernel"]]["ratio"] == pytest.approx(0.686, abs=5e-4)
    # cuBLAS ran at 1455-1470 MHz, the lowest clock of each run
    from simtlab import backend

    for run in backend.recorded("tensor_cores_tf32")["clusters"]["power"]:
        clocks = {r["name"]: r["sm_clock_mhz"] for r in run["rows"]}
        assert 1455.0 <= clocks["cublas:tf32:bt"] <= 1470.0 and clocks["cublas:tf32:bt"] == min(clocks.values())


def _power_parts_entry(scale=1.0):
    """A recorded entry of the power-parts run: the best kernel's variants (TFLOP/s of the first run, the second's
    ``scale`` times that) beside cuBLAS, MMAs alone, the course's kernel and cuBLAS in a run of their own."""
    rate = {"all": 240.0, "no_store": 245.0, "no_data": 270.0, "no_data_ldsm": 285.0, "data_only": 360.0,
            "full_waves": 241.0, "cublas_bt": 342.0}

    def row(name, tflops, mhz=1500.0, watts=700.0):
        return {"name": name, "tflops": tflops, "ms": 137.4 / tflops, "sm_clock_mhz": mhz, "power_w": watts,
                "power_limit_w": 700.0}

    runs = [[row(f"best_{k}" if k != "cublas_bt" else k, v * (s if k != "cublas_bt" else 1.0)) for k, v in rate.items()]
            for s in (1.0, scale)]
    mma = [{"device": "H100", "date": "today", "rows": [row("cublas:tf32:bt", 344.0), row("mma:a4b8_rand", 326.0, 1815.0, 588.0),
                                                        row("mma:a4b8", 328.0, 1830.0, 570.0), row("tc_v6w_x", 238.0)]}
           for _ in range(2)]
    return {"power_parts": {"parts": {"device": "H100", "date": "today", "designs": {"best": "tc_v6w_x"},
                                      "command": "python benchmarks/tensor_cores_tf32_feed.py --designs best --power-seconds 3",
                                      "power_runs": runs},
                            "mma": mma, "ncu": {"best_all": {"cycles": 888000.0, "tensor_pipe_pct": 87.5}},
                            "command": "bash tools/device_tensor_cores_power_parts.sh"}}


def test_the_power_parts_are_each_run_s_rates_over_that_run_s_cublas():
    w = TC.tf32_power_parts(_power_parts_entry(scale=0.9))
    assert w["kernel"] == "tc_v6w_x" and list(w["rows"])[:len(TC.POWER_PARTS)] == list(TC.POWER_PARTS)
    kernel = w["rows"]["the kernel"]
    assert kernel["vs_cublas"] == pytest.approx([240 / 342, 216 / 342]) and kernel["cycles"] == 888000.0
    assert w["rows"]["no tiles (ldmatrix, MMAs)"]["cycles"] is None     # not profiled in this entry
    assert w["mma"]["MMAs alone, random mantissas"]["vs_cublas"] == pytest.approx([326 / 344] * 2)
    assert w["mma"]["the course's kernel"]["kernel"] == "tc_v6w_x"
    # the board's energy for a 4096^3 GEMM's FLOPs: power x 2 * 4096^3 / rate
    assert kernel["mj"] == pytest.approx([700 * 137.438953472 / 240, 700 * 137.438953472 / 216])
    assert w["mma"]["MMAs alone, random mantissas"]["mj"] == pytest.approx([588 * 137.438953472 / 326] * 2)
    text = TC.tf32_power_parts_summary(_power_parts_entry(scale=0.9))
    assert "the kernel" in text and "240.0 / 216.0" in text and "70.2 / 63.2 %" in text and "888k" in text
    # the tiles alone do no MMAs: their time, not a rate
    assert "(in 0.382 / 0.424 ms)" in text
    with pytest.raises(KeyError, match="device_tensor_cores_power_parts.sh"):
        TC.tf32_power_parts({"power_parts": None})


def test_the_recorded_power_parts_are_what_the_chapter_says():
    w = TC.tf32_power_parts()
    rows, mma = w["rows"], w["mma"]
    pct = {label: [100 * v for v in r["vs_cublas"]] for label, r in {**rows, **mma}.items()}
    # MMAs alone: 95 % of cuBLAS at 1.82-1.83 GHz, 570-590 W, under the limit
    for label in TC.POWER_MMA:
        assert all(94.5 < v < 95.6 for v in pct[label]) and all(1815 <= c <= 1830 for c in mma[label]["sm_clock_mhz"])
        assert all(565 < p < 590 for p in mma[label]["power_w"])
    # without tiles 76-79 % at 580-620 W; without ldmatrix too 81-83 %; neither at the limit
    assert all(75.5 < v < 79 for v in pct["no tiles (ldmatrix, MMAs)"]) and all(81 < v < 83.5 for v in pct["no tiles, no ldmatrix (MMAs)"])
    for label in ("no tiles (ldmatrix, MMAs)", "no tiles, no ldmatrix (MMAs)"):
        assert all(560 < p < 620 for p in rows[label]["power_w"])
    # with the tiles: 700 W in the first run, the clock 1.49-1.58 GHz, 68-70 %; the tiles alone 520-536 W at 1.98 GHz
    kernel = rows["the kernel"]
    assert kernel["power_w"][0] > 695 and all(1485 <= c <= 1575 for c in kernel["sm_clock_mhz"])
    assert all(68 < v < 70.5 for v in pct["the kernel"])
    tiles = rows["tiles only (no MMAs)"]
    assert all(519 < p < 537 for p in tiles["power_w"]) and tiles["sm_clock_mhz"] == [1980.0, 1980.0]
    # 4 whole waves: 4 % fewer cycles per FLOP under the profiler, 0.3-0.9 % faster at the power limit
    waves = rows["on 4 whole waves"]
    per_flop = waves["cycles"] / (4224 / 4096) / kernel["cycles"] - 1
    assert -0.045 < per_flop < -0.035
    gains = [b / a - 1 for a, b in zip(kernel["tflops"], waves["tflops"])]
    assert all(0.003 <= g < 0.0095 for g in gains)
    # without the store of C: -0.4 to +1.9 %
    gains = [b / a - 1 for a, b in zip(kernel["tflops"], rows["no store of C"]["tflops"])]
    assert -0.0045 < min(gains) and max(gains) < 0.0195
    # energy for a GEMM's FLOPs: cuBLAS 277-280 mJ, so 70 % of its rate at 700 W allows 396-400; the kernel 391-405 (in
    # both runs of the parts and of MMAs alone); the tiles 84-87 mJ more, ldmatrix 26-29 more
    cublas = rows["cuBLAS TF32 on B^T"]["mj"] + mma["cuBLAS TF32 on B^T"]["mj"]
    assert all(276.5 < e < 280.5 for e in cublas) and [round(min(cublas) / 0.70), round(max(cublas) / 0.70)] == [396, 400]
    assert all(390.5 < e < 405.5 for e in kernel["mj"] + mma["the course's kernel"]["mj"])
    no_tiles, bare = rows["no tiles (ldmatrix, MMAs)"]["mj"], rows["no tiles, no ldmatrix (MMAs)"]["mj"]
    assert all(83.5 < a - b < 87.5 for a, b in zip(kernel["mj"], no_tiles))
    assert all(25.5 < a - b < 29.5 for a, b in zip(no_tiles, bare))
    # warps of nothing but mma.sync: 245-248 mJ, 88-89 % of cuBLAS's whole GEMM in the same run; the 70 % budget leaves
    # the feed about 150 mJ (148-155), of which the tiles and ldmatrix take 109-116
    alone, ref = mma["MMAs alone, random mantissas"]["mj"], mma["cuBLAS TF32 on B^T"]["mj"]
    assert [round(min(alone)), round(max(alone))] == [245, 248]
    share = [a / c for a, c in zip(alone, rows["cuBLAS TF32 on B^T"]["mj"])]
    assert all(0.875 < v < 0.895 for v in share)
    left = [c / 0.70 - a for a, c in zip(alone, rows["cuBLAS TF32 on B^T"]["mj"])]
    assert all(147.5 < v < 155.5 for v in left)
    fed = [k - b for k, b in zip(kernel["mj"], bare)]
    assert [round(min(fed)), round(max(fed))] == [109, 116]
    # in the second run the variants with tiles drew 654-668 W, at a lower clock than in the first
    for label in ("the kernel", "no store of C", "on 4 whole waves"):
        assert 650 < rows[label]["power_w"][1] < 670 and rows[label]["sm_clock_mhz"][1] < rows[label]["sm_clock_mhz"][0]


def _rounds_entry():
    """A recorded entry of two power-rounds runs: the first without the snake kernels, the second with them."""
    def row(name, rnd, tflops, mhz=1500.0, limiters=("sw_power_cap",)):     # a tensor_cores_power.py --rounds row
        return {"name": name, "round": rnd, "tflops": tflops, "ms": 137.4 / tflops, "sm_clock_mhz": mhz, "power_w": 698.0,
                "power_limit_w": 700.0, "gpu_temp_c": 50.0 + rnd, "memory_temp_c": 45.0 + rnd, "limiters": list(limiters)}

    pair, alone, mma, cublas = (TC.POWER_ROUNDS[k] for k in ("clusters of 2, early release", "alone", "MMAs alone",
                                                             "cuBLAS TF32 on B^T"))
    snake = TC.POWER_ROUNDS["the same, snake"]
    first = [row(cublas, r, c) for r, c in enumerate((340.0, 350.0, 345.0))]
    first += [row(pair, r, t) for r, t in enumerate((238.0, 245.0, 238.05))]
    first += [row(alone, r, t, limiters=("sw_power_cap", "sw_thermal_slowdown") if r else ("sw_power_cap",))
              for r, t in enumerate((231.2, 238.0, 234.6))]
    first += [row(mma, r, 330.0, 1980.0, ()) for r in range(3)]
    second = [row(cublas, r, 300.0) for r in range(2)] + [row(pair, r, 210.0) for r in range(2)]
    second += [row(snake, r, t) for r, t in enumerate((207.0, 213.0))]
    ncu = {name: {"dram_read_mb": mb, "l2_read_sectors": 78e6, "cycles": 887e3, "tensor_pipe_pct": 86.7}
           for name, mb in ((pair, 298.0), (snake, 278.0))}
    return {"power_rounds": {"runs": [{"device": "H100 a", "date": "today", "rows": first},
                                      {"device": "H100 b", "date": "today", "rows": second}],
                             "ncu": ncu, "command": "bash tools/device_tensor_cores_power_rounds.sh"}}


def test_the_power_rounds_compare_each_kernel_with_cublas_of_the_same_round():
    w = TC.tf32_power_rounds(_rounds_entry())
    first, second = w["runs"]
    assert first["rounds"] == 3 and list(first["rows"]) == ["clusters of 2, early release", "alone", "MMAs alone",
                                                            "cuBLAS TF32 on B^T"]   # no snake kernels in that run
    pair = first["rows"]["clusters of 2, early release"]
    assert pair["vs_cublas"] == pytest.approx([0.7, 0.7, 0.69])
    assert (pair["median"], pair["low"], pair["high"]) == pytest.approx((0.7, 0.69, 0.7))
    assert first["rows"]["alone"]["limiters"] == {"sw_power_cap": 3, "sw_thermal_slowdown": 2}
    assert first["rows"]["MMAs alone"]["limiters"] == {}
    assert second["rows"]["the same, snake"]["vs_cublas"] == pytest.approx([0.69, 0.71])
    assert w["snake"]["the same, snake"]["dram_read_mb"] == 278.0
    text = TC.tf32_power_rounds_summary(_rounds_entry())
    assert "H100 a, today, 3 rounds:" in text and "H100 b, today, 2 rounds:" in text
    assert "70.0 % (69.0-70.0)" in text and "sw_power_cap (3 of 3), sw_thermal_slowdown (2 of 3)" in text
    assert "nothing named" in text and "340.0-350.0 TFLOP/s" in text and "50-52 / 45-47" in text
    with pytest.raises(KeyError, match="device_tensor_cores_power_rounds.sh"):
        TC.tf32_power_rounds({"power_rounds": None})


def test_nvidia_smi_samples_give_numbers_and_the_reasons_that_held_in_half_of_them():
    power = load_script("benchmarks/tensor_cores_power.py")
    rows = power.parse_samples("1590, 699.1, 700.00, 61, 55, 0x0000000000000004\n"
                               "1575, 698.0, 700.00, 62, [N/A], 0x0000000000000024\n"
                               "1560, 697.5, 700.00, 62\n")           # a line cut short: skipped
    assert [r[1] for r in rows] == [0x4, 0x24] and rows[0][0] == [1590.0, 699.1, 700.0, 61.0, 55.0]
    assert rows[1][0][4] != rows[1][0][4]                               # [N/A] reads as NaN
    assert power.limiters([0x4, 0x24, 0x24]) == ["sw_power_cap", "sw_thermal_slowdown"]
    assert power.limiters([0x4, 0x20, 0x0]) == [] and power.limiters([]) == []


def test_the_recorded_power_rounds_are_what_the_chapter_says():
    import statistics

    w = TC.tf32_power_rounds()
    runs = w["runs"]
    assert len(runs) == 3 and all(run["rounds"] == 6 for run in runs)
    # the power cap in every round of cuBLAS and the course's kernels, nothing else; MMAs alone at 1980 MHz, 617-658 W,
    # nothing named; the GPU at 48-72 C
    for run in runs:
        for label, r in run["rows"].items():
            if label == "MMAs alone":
                assert r["limiters"] == {} and set(r["sm_clock_mhz"]) == {1980.0} and all(616 < p < 659 for p in r["power_w"])
            else:
                assert r["limiters"] == {"sw_power_cap": 6}
    temps = [t for run in runs for r in run["rows"].values() for t in r["gpu_temp_c"]]
    assert (min(temps), max(temps)) == (48.0, 72.0)
    # the pair with early release: medians 69.4, 69.6, 70.0 %; 69.6 % over all 18 rounds, 4 at 70 % or more (68.3-71.1)
    pair = [run["rows"]["clusters of 2, early release"] for run in runs]
    assert sorted(round(100 * r["median"], 1) for r in pair) == [69.4, 69.6, 70.0]
    every = [v for r in pair for v in r["vs_cublas"]]
    assert round(100 * statistics.median(every), 1) == 69.6 and sum(v >= 0.70 for v in every) == 4
    assert (round(100 * min(every), 1), round(100 * max(every), 1)) == (68.3, 71.1)
    alone = [v for run in runs for v in run["rows"]["alone"]["vs_cublas"]]
    assert round(100 * statistics.median(alone), 1) == 68.3 and max(alone) < 0.70
    # warps of nothing but MMAs spend 91-99 % of cuBLAS's joules of the same round (88-99 % with the power-parts run)
    share = [m / c for run in runs for m, c in zip(run["rows"]["MMAs alone"]["mj"], run["rows"]["cuBLAS TF32 on B^T"]["mj"])]
    assert (round(100 * min(share)), round(100 * max(share))) == (91, 99)
    # snake: 6-7 % fewer DRAM bytes (298 -> 278 MB in clusters), 0.2-0.5 % more cycles; at 700 W the medians of its rounds
    # against the kernel's of the same round -0.2 % in clusters, -0.5 % alone
    s = w["snake"]
    for base, snake in (("clusters of 2, early release", "the same, snake"), ("alone", "alone, snake")):
        assert 0.055 < 1 - s[snake]["dram_read_mb"] / s[base]["dram_read_mb"] < 0.07
        assert 0.0015 < s[snake]["cycles"] / s[base]["cycles"] - 1 < 0.0055
        gains = [a / b - 1 for run in runs if snake in run["rows"]
                 for a, b in zip(run["rows"][snake]["tflops"], run["rows"][base]["tflops"])]
        assert round(100 * statistics.median(gains), 1) == {"the same, snake": -0.2, "alone, snake": -0.5}[snake]
    assert round(s["clusters of 2, early release"]["dram_read_mb"]) == 298 and round(s["the same, snake"]["dram_read_mb"]) == 278


def _labelled(fig):
    assert fig._suptitle is not None and fig._suptitle.get_text()
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel()


def test_the_joules_figure_draws_each_bar_at_its_runs_mean_and_the_goal_s_budget():
    import numpy as np
    from simtlab.plots import tensor_cores as P

    parts = TC.tf32_power_parts()
    fig = P.plot_tf32_joules(parts)
    _labelled(fig)
    ax = fig.axes[0]
    widths = [bar.get_width() for bar in ax.patches]
    assert widths == pytest.approx([np.mean(parts[group][row]["mj"]) for _, group, row in P.TF32_JOULES_BARS])
    # the bars top to bottom in TF32_JOULES_BARS' order, named by it
    top_down = sorted(zip(ax.get_yticks(), ax.get_yticklabels()), key=lambda tick: -tick[0])
    assert [t.get_text() for _, t in top_down] == [name for name, _, _ in P.TF32_JOULES_BARS]
    assert [bar.get_y() for bar in ax.patches] == sorted((bar.get_y() for bar in ax.patches), reverse=True)
    budget = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert len(budget) == 1
    assert budget[0].get_xdata()[0] == pytest.approx(np.mean(parts["rows"]["cuBLAS TF32 on B^T"]["mj"]) / 0.70)
    # the recorded figure: the kernel's bar sits at the budget (within 1 %), warps of nothing but MMAs below cuBLAS's
    assert abs(widths[-1] / budget[0].get_xdata()[0] - 1) < 0.01 and widths[1] < widths[0]


def test_the_rounds_figure_plots_every_round_of_every_board_against_the_goal():
    from simtlab.plots import tensor_cores as P

    rounds = TC.tf32_power_rounds()
    fig = P.plot_tf32_rounds(rounds)
    _labelled(fig)
    ax = fig.axes[0]
    series = [line for line in ax.lines if line.get_marker() in ("o", "s")]
    expected = [100 * run["rows"][name]["vs_cublas"][i] for run in rounds["runs"] for name, _, _ in P.TF32_ROUNDS_SERIES
                if name in run["rows"] for i in range(run["rounds"])]
    assert [y for line in series for y in line.get_ydata()] == pytest.approx(expected)
    goal = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert len(goal) == 1 and goal[0].get_ydata()[0] == pytest.approx(70.0)
    # a legend entry per series, once, however many boards ran it
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == sorted(
        [name for name, _, _ in P.TF32_ROUNDS_SERIES] + ["the goal, 70% of cuBLAS"])


def _power_row(name, rnd, tflops, watts=700.0):
    """A tensor_cores_power.py --rounds row at 1500 MHz, held down by the power cap."""
    return {"name": name, "round": rnd, "tflops": tflops, "ms": 137.4 / tflops, "sm_clock_mhz": 1500.0,
            "power_w": watts, "power_limit_w": 700.0, "gpu_temp_c": 60.0, "memory_temp_c": 55.0,
            "limiters": ["sw_power_cap"]}


def _instructions_entry():
    """A recorded power-instructions run of two rounds and its Nsight Compute medians (cuBLAS under its kernel's name)."""
    names = TC.POWER_INSTRUCTIONS
    rows = [_power_row(names["cuBLAS TF32 on B^T"], r, t) for r, t in enumerate((350.0, 340.0))]
    rows += [_power_row(names["wgmma (v7, B^T given)"], r, t) for r, t in enumerate((315.0, 323.0))]
    rows += [_power_row(names["mma.sync, clusters of 2"], r, t) for r, t in enumerate((245.0, 238.0))]
    ncu = {names["wgmma (v7, B^T given)"]: {"dram_read_mb": 373.0, "l2_read_sectors": 74.6e6, "cycles": 594e3},
           "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_x": {"dram_read_mb": 294.0, "l2_read_sectors": 72.4e6, "cycles": 571e3}}
    return {"power_instructions": {"run": {"device": "H100 d", "date": "today", "rows": rows}, "ncu": ncu,
                                   "command": "bash tools/device_tensor_cores_power_instructions.sh"}}


def test_the_instruction_rounds_compare_each_kernel_with_cublas_of_its_round_and_name_cublas_s_profile():
    w = TC.tf32_power_instructions(_instructions_entry())
    rows = w["run"]["rows"]
    assert list(rows) == ["wgmma (v7, B^T given)", "mma.sync, clusters of 2", "cuBLAS TF32 on B^T"]   # only what ran
    assert rows["wgmma (v7, B^T given)"]["vs_cublas"] == pytest.approx([0.9, 0.95])
    assert rows["mma.sync, clusters of 2"]["median"] == pytest.approx((0.7 + 0.7) / 2)
    # millijoules of one GEMM: watts x its time; the median of the rounds
    assert rows["mma.sync, clusters of 2"]["mj_median"] == pytest.approx(700.0 * 2 * 4096 ** 3 / 1e9 * (1 / 245 + 1 / 238) / 2)
    assert set(w["ncu"]) == {"wgmma (v7, B^T given)", "cuBLAS TF32 on B^T"}
    assert w["ncu"]["cuBLAS TF32 on B^T"]["cycles"] == 571e3
    text = TC.tf32_power_instructions_summary(_instructions_entry())
    assert "92.5 % (90.0-95.0)" in text and "340.0-350.0 TFLOP/s" in text and "74.6M" in text
    with pytest.raises(KeyError, match="device_tensor_cores_power_instructions.sh"):
        TC.tf32_power_instructions({"power_instructions": None})


def test_the_recorded_instruction_rounds_are_what_the_chapter_says():
    import statistics

    w = TC.tf32_power_instructions()
    rows, ncu = w["run"]["rows"], w["ncu"]
    assert w["run"]["rounds"] == 6
    mj = {label: round(r["mj_median"]) for label, r in rows.items()}
    # wgmma: 92.1 % of cuBLAS at 700 W, 303 mJ; the pair 405, alone 411; MMAs alone 277, cuBLAS 279
    assert round(100 * rows["wgmma (v7, B^T given)"]["median"], 1) == 92.1
    assert mj == {"wgmma (v7, B^T given)": 303, "mma.sync, clusters of 2": 405, "mma.sync, alone": 411,
                  "MMAs alone": 277, "cuBLAS TF32 on B^T": 279}
    assert all(r["limiters"] == {"sw_power_cap": 6} for label, r in rows.items() if label != "MMAs alone")
    # the wgmma kernel moves no fewer bytes: 373 MB from DRAM against 298, 74.6 M L2 sectors against 77.8 M
    assert round(ncu["wgmma (v7, B^T given)"]["dram_read_mb"]) == 373 and round(ncu["mma.sync, clusters of 2"]["dram_read_mb"]) == 298
    assert round(ncu["wgmma (v7, B^T given)"]["l2_read_sectors"] / 1e6, 1) == 74.6
    assert round(ncu["mma.sync, clusters of 2"]["l2_read_sectors"] / 1e6, 1) == 77.8
    # 70 % of cuBLAS's rate allows 399 mJ: 122 beyond the MMAs alone; the pair's feed 128, alone 134
    budget = rows["cuBLAS TF32 on B^T"]["mj_median"] / 0.70
    alone = rows["MMAs alone"]["mj_median"]
    assert round(budget) == 399 and round(budget - alone) == 122
    assert round(rows["mma.sync, clusters of 2"]["mj_median"] - alone) == 128
    assert round(rows["mma.sync, alone"]["mj_median"] - alone) == 134
    # MMAs alone at 96 % of cuBLAS; the pair 69.0 % (68.7-70.3); with the three boards of the rounds, 69.6 % over 24
    # rounds on four boards, 5 at 70 % or more
    assert round(100 * rows["MMAs alone"]["median"]) == 96
    pair = rows["mma.sync, clusters of 2"]
    assert [round(100 * pair[k], 1) for k in ("median", "low", "high")] == [69.0, 68.7, 70.3]
    every = pair["vs_cublas"] + [v for run in TC.tf32_power_rounds()["runs"]
                                 for v in run["rows"]["clusters of 2, early release"]["vs_cublas"]]
    assert len(every) == 24 and round(100 * statistics.median(every), 1) == 69.6 and sum(v >= 0.70 for v in every) == 5


def _tma_rounding_entry():
    """A recorded TF32-tensor-map run of two rounds: cuBLAS and the pair with either map, and one MMAs-alone row."""
    names = TC.TMA_ROUNDING
    rows = [_power_row(names["cuBLAS TF32 on B^T"], r, t) for r, t in enumerate((350.0, 340.0))]
    rows += [_power_row(names["clusters of 2, FP32 maps"], r, t) for r, t in enumerate((238.0, 241.0))]
    rows += [_power_row(names["clusters of 2, TF32 maps"], r, t) for r, t in enumerate((252.0, 241.4))]
    rows += [_power_row(names["MMAs alone, 10-bit mantissas"], r, 330.0, 630.0) for r in range(2)]
    seen = {"truncated": {"all": 1.0, "ties": 1.0}, "nearest even": {"all": 0.5, "ties": 0.5},
            "nearest, ties away": {"all": 0.4, "ties": 0.0}}
    rounded = {"truncated": {"all": 0.5, "ties": 0.5}, "nearest even": {"all": 1.0, "ties": 1.0},
               "nearest, ties away": {"all": 0.9, "ties": 0.5}}
    rounding = {names["cuBLAS TF32 on B^T"]: rounded, names["clusters of 2, FP32 maps"]: seen,
                names["clusters of 2, TF32 maps"]: rounded}
    accuracy = {name: {"relative_error": 3e-5 if r is rounded else 7.7e-5, "mean_abs_error": 0.0044 if r is rounded else 0.0118}
                for name, r in rounding.items()}
    ncu = {names["clusters of 2, FP32 maps"]: {"instructions": 118.4e6, "dram_read_mb": 298.0, "l2_read_sectors": 77.7e6,
                                                "cycles": 888e3},
           names["clusters of 2, TF32 maps"]: {"instructions": 118.4e6, "dram_read_mb": 298.0, "l2_read_sectors": 77.6e6,
                                                "cycles": 884e3}}
    return {"tma_rounding": {"run": {"device": "H100 d", "date": "today", "rows": rows}, "rounding": rounding,
                             "accuracy": accuracy, "ncu": ncu, "command": "bash tools/device_tensor_cores_tma_rounding.sh"}}


def test_the_tma_rounding_run_names_each_gemm_by_its_chapter_label_and_compares_rounds_with_cublas():
    w = TC.tf32_tma_rounding(_tma_rounding_entry())
    rows = w["run"]["rows"]
    assert list(rows) == ["cuBLAS TF32 on B^T", "clusters of 2, FP32 maps", "clusters of 2, TF32 maps",
                          "MMAs alone, 10-bit mantissas"]                                     # only what ran, in order
    assert rows["clusters of 2, TF32 maps"]["vs_cublas"] == pytest.approx([0.72, 0.71])
    assert rows["clusters of 2, TF32 maps"]["median"] == pytest.approx(0.715)
    assert rows["MMAs alone, 10-bit mantissas"]["mj_median"] == pytest.approx(630.0 * 2 * 4096 ** 3 / 330e9)
    assert w["rounding"]["clusters of 2, TF32 maps"]["nearest even"]["ties"] == 1.0
    assert w["accuracy"]["clusters of 2, FP32 maps"]["relative_error"] == 7.7e-5 and set(w["ncu"]) == {
        "clusters of 2, FP32 maps", "clusters of 2, TF32 maps"}
    text = TC.tf32_tma_rounding_summary(_tma_rounding_entry())
    assert "71.5 % (71.0-72.0)" in text and "340.0-350.0 TFLOP/s" in text and "118.4M" in text and "7.70e-05" in text
    with pytest.raises(KeyError, match="device_tensor_cores_tma_rounding.sh"):
        TC.tf32_tma_rounding({"tma_rounding": None})


def test_the_recorded_tma_rounding_is_what_the_chapter_says():
    w = TC.tf32_tma_rounding()
    rows, read, acc, ncu = w["run"]["rows"], w["rounding"], w["accuracy"], w["ncu"]
    assert w["run"]["rounds"] == 6 and len(rows) == len(TC.TMA_ROUNDING)
    # what each GEMM read: FP32 maps truncate, TF32 maps round to nearest even (ties too), as cuBLAS does
    for label in ("clusters of 2, FP32 maps", "alone, FP32 maps"):
        assert read[label]["truncated"] == {"all": 1.0, "ties": 1.0} and read[label]["nearest even"]["ties"] < 0.51
    for label in ("cuBLAS TF32 on B^T", "clusters of 2, TF32 maps", "alone, TF32 maps"):
        assert read[label]["nearest even"] == {"all": 1.0, "ties": 1.0} and read[label]["nearest, ties away"]["ties"] < 0.51
    # errors against float64: 3.0e-5 rounded (cuBLAS's the same), 7.7e-5 truncated; mean 0.0044 against 0.0118
    assert f"{acc['clusters of 2, TF32 maps']['relative_error']:.1e}" == "3.0e-05" == f"{acc['cuBLAS TF32 on B^T']['relative_error']:.1e}"
    assert f"{acc['clusters of 2, FP32 maps']['relative_error']:.1e}" == "7.7e-05"
    assert round(acc["clusters of 2, TF32 maps"]["mean_abs_error"], 4) == 0.0044 and round(acc["clusters of 2, FP32 maps"]["mean_abs_error"], 4) == 0.0118
    # at 700 W: the pair 69.4 % with FP32 maps, 71.4 % (71.0-71.9) with TF32 maps; alone 68.4 -> 70.1 %
    pct = {label: [round(100 * r[k], 1) for k in ("median", "low", "high")] for label, r in rows.items()}
    assert pct["clusters of 2, FP32 maps"][0] == 69.4 and pct["clusters of 2, TF32 maps"] == [71.4, 71.0, 71.9]
    assert pct["alone, FP32 maps"][0] == 68.4 and pct["alone, TF32 maps"][0] == 70.1
    assert pct["clusters of 2, FP32 maps, inputs rounded in memory"][0] == 72.8 and pct["cuBLAS, inputs rounded in memory"][0] == 103.4
    mj = {label: round(r["mj_median"]) for label, r in rows.items()}
    assert (mj["cuBLAS TF32 on B^T"], mj["clusters of 2, FP32 maps"], mj["clusters of 2, TF32 maps"]) == (283, 406, 396)
    assert (mj["clusters of 2, FP32 maps, inputs rounded in memory"], mj["cuBLAS, inputs rounded in memory"]) == (387, 273)
    assert (mj["MMAs alone, random mantissas"], mj["MMAs alone, 10-bit mantissas"]) == (278, 266)
    assert round(rows["cuBLAS TF32 on B^T"]["mj_median"] / 0.70) == 404
    assert all(r["limiters"] == {"sw_power_cap": 6} for label, r in rows.items() if not label.startswith("MMAs"))
    # the same work: instructions and bytes within 0.1 %, cycles within 1 %
    fp32, tf32 = ncu["clusters of 2, FP32 maps"], ncu["clusters of 2, TF32 maps"]
    for k, tol in (("instructions", 0.001), ("dram_read_mb", 0.001), ("l2_read_sectors", 0.001), ("cycles", 0.01)):
        assert abs(tf32[k] / fp32[k] - 1) < tol, k


def test_the_tma_rounding_figure_draws_each_bar_at_its_rounds_median_against_the_goal_s_budget():
    import numpy as np
    from simtlab.plots import tensor_cores as P

    w = TC.tf32_tma_rounding()
    fig = P.plot_tf32_tma_rounding(w)
    _labelled(fig)
    ax = fig.axes[0]
    rows = w["run"]["rows"]
    assert [bar.get_width() for bar in ax.patches] == pytest.approx([rows[row]["mj_median"] for _, row in P.TF32_TMA_BARS])
    top_down = sorted(zip(ax.get_yticks(), ax.get_yticklabels()), key=lambda tick: -tick[0])
    assert [t.get_text() for _, t in top_down] == [name for name, _ in P.TF32_TMA_BARS]
    budget = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert len(budget) == 1 and budget[0].get_xdata()[0] == pytest.approx(rows["cuBLAS TF32 on B^T"]["mj_median"] / 0.70)
    # every bar's text in one column right of the budget line and of every whisker, naming its rate
    texts = [t for t in ax.texts if "of cuBLAS's rate" in t.get_text()]
    assert len(texts) == len(P.TF32_TMA_BARS) and len({t.get_position()[0] for t in texts}) == 1
    assert texts[0].get_position()[0] > max([budget[0].get_xdata()[0]] + [max(rows[r]["mj"]) for _, r in P.TF32_TMA_BARS])
    # the TF32 maps' bar is the one mma.sync bar inside the budget with raw inputs
    widths = dict(zip([row for _, row in P.TF32_TMA_BARS], (bar.get_width() for bar in ax.patches)))
    assert widths["clusters of 2, TF32 maps"] < budget[0].get_xdata()[0] < widths["clusters of 2, FP32 maps"]
    assert np.isclose(widths["cuBLAS TF32 on B^T"], rows["cuBLAS TF32 on B^T"]["mj_median"])
