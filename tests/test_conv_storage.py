"""Chapter 7's 16-bit storage comparison, headless: v6 FP32 against v6h (x and y in FP16 or BF16)
as ``benchmarks/conv_gpu.py --storage`` records it, rendered by ``gpubench.conv`` from a synthetic
result (ratios, GB/s, and which conclusion each outcome supports); the storage rows of the
benchmark; and the recorded H100 run itself.

THE PENDING TEST FAILS UNTIL THE H100 RUN IS RECORDED: run, on the H100,
    python benchmarks/conv_gpu.py --storage
which writes benchmarks/results/conv_storage_h100.json (chapter 7 reads it)."""

from __future__ import annotations

import pytest

from simtlab.gpubench import conv as G
from simtlab.kernels import conv as K


def _row(name, ms, nbytes):
    return {"name": name, "median_ms": ms, "bytes": nbytes, "gbps": nbytes / (ms * 1e-3) / 1e9}


def _result(fp32_ms, fp16_ms, bf16_ms, layers=("C1",)):
    """A result shaped as --storage writes it, with C1's real byte counts at batch 1,000."""
    full = K.conv_bytes(1000, 1, 86, 86, 4, 7, 80, 80)
    half = K.storage_bytes(1000, 1, 86, 86, 4, 7, 80, 80)
    rows = [_row("v6 FP32 (cuda-c)", fp32_ms, full), _row("v6h FP16 storage (cuda-c)", fp16_ms, half),
            _row("v6h BF16 storage (cuda-c)", bf16_ms, half)]
    return {"device": "NVIDIA H100 80GB HBM3", "date": "2026-11-27", "source": "recorded",
            "peaks": {"fp32_tflops": 66.9, "hbm_gbps": 3350.0},
            "layers": {layer: {"1000": {"rows": rows}} for layer in layers}}


def test_storage_bytes_halve_x_and_y_and_keep_the_weights_fp32():
    full = K.conv_bytes(1000, 1, 86, 86, 4, 7, 80, 80)
    half = K.storage_bytes(1000, 1, 86, 86, 4, 7, 80, 80)
    assert half == (1000 * 86 * 86 + 1000 * 4 * 80 * 80) * 2 + 4 * 49 * 4
    assert full - half == (1000 * 86 * 86 + 1000 * 4 * 80 * 80) * 2


def test_comparison_gives_each_rows_time_ratio_and_achieved_bandwidth():
    cmp = G.storage_comparison(_result(0.093, 0.0744, 0.1023), "C1")
    rows = cmp["rows"]
    assert rows["fp32"]["speedup"] == 1.0
    assert rows["fp16"]["speedup"] == pytest.approx(0.093 / 0.0744)
    assert rows["bf16"]["speedup"] == pytest.approx(0.093 / 0.1023)
    assert rows["fp16"]["gbps"] == pytest.approx(K.storage_bytes(1000, 1, 86, 86, 4, 7, 80, 80) / 74.4e-6 / 1e9)
    assert cmp["device"] == "NVIDIA H100 80GB HBM3"


def test_summary_says_faster_and_by_how_much_only_when_it_is():
    text = G.storage_summary(_result(0.093, 0.0744, 0.090), "C1")
    assert "faster: FP16 1.25x" in text and "16-bit storage would not help is wrong here" in text
    assert "as predicted" not in text


def test_summary_says_the_issue_bound_reading_holds_when_the_time_stays():
    text = G.storage_summary(_result(0.093, 0.0925, 0.094), "C1")
    assert "the same time" in text and "DRAM traffic does not limit v6 here (Nsight Compute calls v6 issue-bound on C1), as predicted" in text
    assert "is faster" not in text
    c3 = G.storage_summary(_result(0.093, 0.0925, 0.094, layers=("C3",)), "C3")
    assert "as predicted" in c3 and "issue-bound" not in c3             # ncu profiled C1 only
    slower = G.storage_summary(_result(0.093, 0.099, 0.101), "C1")
    assert "Both 16-bit variants are slower (the better 0.94x" in slower


def test_summary_lists_time_bytes_and_bandwidth_of_each_row_with_the_card():
    text = G.storage_summary(_result(0.093, 0.0925, 0.094), "C1")
    assert "NVIDIA H100 80GB HBM3" in text
    assert "93.0 µs" in text and "132.0 MB" in text and "66.0 MB" in text
    assert f"{K.conv_bytes(1000, 1, 86, 86, 4, 7, 80, 80) / 93e-6 / 1e9:.0f} GB/s" in text
    assert "42% of the 3.35 TB/s HBM peak" in text


def test_report_covers_the_recorded_layers_and_says_when_nothing_is_recorded():
    both = G.storage_report(_result(0.093, 0.0925, 0.094, layers=("C1", "C3")))
    assert both.count("batch 1,000") == 2 and "C3" in both
    assert G.storage_report(_result(0.093, 0.0925, 0.094)).count("batch 1,000") == 1
    none = G.storage_recorded("/nonexistent/conv_storage.json")
    assert none["source"] == "none"
    assert "benchmarks/conv_gpu.py --storage" in G.storage_report(none)
    assert G.storage_measured_ms(none) == {}


def test_a_missing_row_is_named():
    res = _result(0.093, 0.0925, 0.094)
    res["layers"]["C1"]["1000"]["rows"].pop()
    with pytest.raises(KeyError, match="v6h BF16 storage"):
        G.storage_summary(res, "C1")


def test_storage_floors_plot_draws_the_measured_rows():
    from simtlab.plots import conv as P

    measured = G.storage_measured_ms(_result(0.093, 0.0925, 0.094))
    assert measured == {"v6 FP32": 0.093, "v6h FP16 storage": 0.0925, "v6h BF16 storage": 0.094}
    fig = P.plot_storage_floors(measured_ms=measured)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()][-3:] == list(measured)
    drawn = sorted(round(bar.get_width(), 1) for bar in ax.patches)
    assert drawn[-3:] == [92.5, 93.0, 94.0]                     # the recorded times, in µs


def test_storage_rows_of_the_benchmark():
    """v6 FP32 is the one reference; each 16-bit row counts its own (halved) bytes."""
    for layer in ("C1", "C3"):
        cases = G.storage_cases(layer)
        assert [c.name for c in cases] == ["v6 FP32 (cuda-c)", "v6h FP16 storage (cuda-c)", "v6h BF16 storage (cuda-c)"]
        assert [c.reference for c in cases] == [True, False, False]
        s = G.layer_shape(layer)
        ho, wo = s["H"] - s["K"] + 1, s["W"] - s["K"] + 1
        assert cases[1].bytes_moved(1000) == K.storage_bytes(1000, s["C"], s["H"], s["W"], s["M"], s["K"], ho, wo)
        assert cases[0].bytes_moved(1000) == K.conv_bytes(1000, s["C"], s["H"], s["W"], s["M"], s["K"], ho, wo)


def test_PENDING_storage_is_measured_on_the_h100():
    """Fails until the lead runs `python benchmarks/conv_gpu.py --storage` on the H100: chapter 7's
    16-bit storage comparison says "not measured yet" until then."""
    res = G.storage_recorded()
    assert res["source"] == "recorded", res.get("message")
    assert "H100" in res["device"]
    for layer in ("C1", "C3"):
        assert not res["layers"][layer]["1000"]["errors"], res["layers"][layer]["1000"]["errors"]
        assert "v6 FP32" in G.storage_summary(res, layer)


@pytest.mark.parametrize("key, path", [("conv_optim", "benchmarks/results/conv_optim_h100.json"),
                                       ("conv_storage", "benchmarks/results/conv_storage_h100.json")])
def test_the_package_store_holds_the_recorded_run_a_wheel_shows(key, path):
    """Chapter 7 reads these runs from the store that ships in the wheel, not from the checkout."""
    import json
    from pathlib import Path

    from simtlab import gpubench

    file = json.loads((Path(__file__).resolve().parent.parent / path).read_text())
    assert gpubench.stored(key) == file
    loaded = {"conv_optim": G.optim_recorded, "conv_storage": G.storage_recorded}[key]()
    assert loaded["source"] == "recorded" and loaded["date"] == file["date"]
