"""Chapter 8's figures, headless: each returns a Figure with a title and labelled axes (units),
drawn from a results dict shaped like benchmarks/gpu_cnn.py's and from the recorded one."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from simtlab import cnn_data
from simtlab.plots import cnn as P

LAYERS = ["conv1", "pool1", "conv2", "pool2", "fc1", "fc2", "softmax"]


def _fake_results():
    big = {layer: {"course implicit": 0.1 * (i + 1), "PyTorch": 0.2} for i, layer in enumerate(LAYERS)}
    big["conv1+pool1"] = {"course fused": 0.05, "PyTorch": 0.4}
    big["conv2+pool2"] = {"course fused": 0.06, "PyTorch": 0.4}
    return {"stamp": {"device": "Test GPU"}, "batch_big": 10_000, "per_layer_big_ms": big, "per_layer_1_ms": big,
            "per_layer_numpy_cpu_batch1000_ms": {layer: 5.0 for layer in LAYERS},
            "batch1_latency_ms": {"PyTorch eager": 0.2, "PyTorch CUDA graph": 0.03, "course cuda-c CUDA graph": 0.02}}


def _check(fig):
    assert isinstance(fig, Figure)
    assert fig._suptitle is not None and fig._suptitle.get_text()
    for ax in fig.axes:
        if ax.get_visible() and ax.axison:
            assert ax.get_xlabel() or ax.get_ylabel()


def test_network_figure_has_every_layer_with_its_shape():
    fig = P.plot_network(batch=1)
    _check(fig)
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks[0] == "conv1\n6x24x24" and ticks[3] == "pool2\n16x4x4" and len(ticks) == 7
    assert "[FLOP]" in fig.axes[0].get_ylabel()


def test_timing_figures_from_a_results_dict():
    res = _fake_results()
    for fig in (P.plot_layer_timings(res), P.plot_layer_timings(res, "1"), P.plot_layer_shares(res), P.plot_latency(res)):
        _check(fig)
    rows = dict(P.timing_rows(res))
    assert rows["conv1"]["NumPy CPU (batch 1,000)"] == 5.0
    shares = P.layer_shares(res)
    assert sum(shares.values()) == pytest.approx(1.0)
    assert max(shares, key=shares.get) == "softmax"              # 0.7 of 2.8 in the fake table
    assert "conv1+pool1" not in shares                            # fused rows are not double-counted


def test_recorded_results_draw():
    res = P.recorded()
    for fig in (P.plot_layer_timings(res), P.plot_layer_shares(res), P.plot_latency(res)):
        _check(fig)


def test_predictions_grid_marks_wrong_ones():
    s = cnn_data.load_sample()
    pred = s.labels[:7].copy()
    pred[2] = (pred[2] + 1) % 10
    fig = P.plot_predictions(s.images[:7], s.labels[:7], pred, np.full(7, 0.9), cnn_data.CLASSES)
    _check(fig)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert len(titles) == 7 and "(is " in titles[2] and "(is " not in titles[0]


def test_activations_show_every_channel_or_every_unit():
    from simtlab.cnn_data import CLASSES
    from simtlab.plots.cnn import plot_activations

    rng = np.random.default_rng(0)
    outputs = {"conv2": rng.random((1, 16, 8, 8), dtype=np.float32),
               "softmax": np.full((1, 10), 0.1, np.float32)}
    image = np.zeros((28, 28), np.uint8)
    maps = plot_activations(image, outputs, "conv2", CLASSES)
    assert len(maps.axes) == 1 + 16 and "conv2" in maps._suptitle.get_text()
    bars = plot_activations(image, outputs, "softmax", CLASSES)
    assert len(bars.axes) == 2
    assert bars.axes[1].get_ylabel() == "probability" and bars.axes[1].get_xlabel() == "class"
    with pytest.raises(ValueError, match="unknown layer 'conv3'"):
        plot_activations(image, outputs, "conv3", CLASSES)


def test_cnn_widget_runs_the_chosen_image_through_the_emulated_network():
    from simtlab.widgets import cnn_widget

    w = cnn_widget(choices=3)
    first = (w.figure.value, w.summary.value)
    assert "largest difference from the NumPy reference" in first[1]
    diff = float(first[1].rsplit(" ", 1)[1])
    assert diff < 1e-4, "the emulated kernels and the NumPy reference disagree"
    w.controls["layer"].value = "pool1"
    assert w.figure.value != first[0] and "output (6, 12, 12)" in w.summary.value
    w.controls["image"].value = w.controls["image"].options[1][1]
    assert "Trouser" in w.summary.value          # image 1 is the first trouser of the sample


def test_chapter_8_timings_are_recorded_without_a_gpu():
    from simtlab.gpubench import cnn as G

    res = G.results(live=False)
    assert res["source"] == "recorded" and res["batch_big"] == 10_000
    assert res["batch_big_ms"]["course cuda-c fused"] < res["batch_big_ms"]["PyTorch eager"]
    _check(P.plot_layer_timings(res))


def _fake_graph_fused():
    same = {"graph_equals_eager_bits": True, "graph_max_abs_diff_vs_reference": 1e-8}
    conv = {"PyTorch conv2d, then ReLU": 0.30, "cuDNN fused conv + bias + ReLU": 0.20,
            "course direct, bias + ReLU in the store": 0.10}
    pooled = {"cuDNN fused conv + bias + ReLU, then max-pool": 0.40, "course conv + bias + ReLU + pool, one kernel": 0.08}
    return {"graphs": {"us": {"numba eager": 200.0, "numba CUDA graph": 25.0, "cuda-c eager": 40.0,
                              "cuda-c CUDA graph": 20.0},
                       "checks": {"numba": same, "cuda-c": same}, "device": "Test GPU", "date": "2026-11-27",
                       "timer": "CUDA events"},
            "fused": {"batch": 10_000, "torch": "2.x", "cudnn": 91000, "device": "Test GPU", "date": "2026-11-27",
                      "layers": {"conv1": {"conv+bias+relu": conv, "+pool": pooled}},
                      "kernels": {"conv1": ["cudnn_generated_fort_native_sdpa", "other"]}}}


def test_graph_table_gives_each_variant_against_the_fastest_and_what_a_graph_saves():
    table = P.batch1_graphs_table(_fake_graph_fused())
    rows = {r[0]: r for r in table.rows}
    assert [r[0] for r in table.rows] == ["numba eager", "numba CUDA graph", "CUDA C eager", "CUDA C CUDA graph"]
    assert rows["numba eager"][2] == "10.00" and rows["CUDA C CUDA graph"][2] == "1.00"
    assert rows["numba CUDA graph"][3] == "same bits"
    assert "saves 175.0 µs per forward in numba-cuda and 20.0 µs in CUDA C" in table.note
    assert "Test GPU" in table.title


def test_fused_baseline_table_sorts_each_part_and_names_cudnns_kernels():
    table = P.cudnn_fused_table(_fake_graph_fused())
    names = [r[2] for r in table.rows]
    assert names[:3] == ["course direct, bias + ReLU in the store", "cuDNN fused conv + bias + ReLU",
                         "PyTorch conv2d, then ReLU"]
    assert table.rows[2][4] == "3.00" and table.rows[4][4] == "5.00"      # 0.30 / 0.10, 0.40 / 0.08
    assert "cudnn_generated_fort_native_sdpa" in table.note and 0 in table.bold and 3 in table.bold


def test_graph_and_fused_baselines_are_recorded_on_a_gpu():
    """Chapter 8 shows these tables from the recorded run: python benchmarks/gpu_cnn_graph_fused.py
    --store on the H100 writes it (fails until it has run)."""
    from simtlab.gpubench.cnn import BATCH1_GRAPH_ROWS, graph_fused_recorded

    entry = graph_fused_recorded()
    assert set(entry["graphs"]["us"]) == set(BATCH1_GRAPH_ROWS)
    assert all(c["graph_equals_eager_bits"] for c in entry["graphs"]["checks"].values())
    assert {"conv1", "conv2"} <= set(entry["fused"]["layers"])
    assert P.batch1_graphs_table().title != "Not recorded yet"
