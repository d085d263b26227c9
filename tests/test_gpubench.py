"""The GPU benchmark's bookkeeping, without a GPU: recorded results, tables and plots."""

from __future__ import annotations

import json
import types

import pytest
from matplotlib.figure import Figure

from simtlab import gpubench
from simtlab.gpubench.harness import Case, run_topic
from simtlab.source import kernel_source, show_source
from simtlab.kernels import intro


def _fake_result(source="recorded"):
    rows = [
        {"name": "cupy.sum (CUB)", "impl": "library", "reference": True, "median_ms": 0.40,
         "min_ms": 0.39, "spread": 0.01, "gbps": 2684.4, "bytes": 2**30},
        {"name": "v1 interleaved (numba)", "impl": "numba", "reference": False, "median_ms": 4.0,
         "min_ms": 3.9, "spread": 0.02, "gbps": 268.4, "bytes": 2**30},
        {"name": "v5 grid-stride float4 (CUDA C)", "impl": "cuda-c", "reference": False, "median_ms": 0.41,
         "min_ms": 0.40, "spread": 0.01, "gbps": 2618.9, "bytes": 2**30},
    ]
    for r in rows:
        r["ratio"] = r["gbps"] / rows[0]["gbps"]
    sizes = [2**16, 2**20, 2**24, 2**28]
    return {"source": source, "topic": "reduction", "n": 2**28, "reference": "cupy.sum", "rows": rows,
            "device": "NVIDIA H100 80GB HBM3", "date": "2026-11-22",
            "sweep": {"sizes": sizes, "gbps": {r["name"]: [r["gbps"] * s / 2**28 for s in sizes] for r in rows}}}


def test_recorded_says_when_nothing_is_recorded(tmp_path):
    path = tmp_path / "none.json"
    res = gpubench.recorded("scan", path=path)
    assert res["source"] == "none" and "benchmarks/gpu_bandwidth.py" in res["message"]


def test_recorded_reads_the_file_and_stamps_the_device(tmp_path):
    path = tmp_path / "bw.json"
    fake = _fake_result()
    path.write_text(json.dumps({"device": "H100 test", "date": "2026-01-02", "versions": {"cupy": "14"},
                                "topics": {"reduction": {k: fake[k] for k in ("n", "reference", "rows")}}}))
    res = gpubench.recorded("reduction", path=path)
    assert res["source"] == "recorded" and res["device"] == "H100 test" and len(res["rows"]) == 3


def test_unknown_topic_is_named():
    with pytest.raises(ValueError, match="benchmarked topics are patterns, scan, reduction"):
        gpubench.recorded("gemm")


def test_summary_table_lists_every_version_with_its_ratio():
    text = gpubench.summary_table(_fake_result())
    lines = text.splitlines()
    assert len(lines) == 4
    assert "10%" in lines[2] and "98%" in lines[3]


@pytest.mark.parametrize("fn", [gpubench.plot_bandwidth, gpubench.plot_sweep])
def test_plots_draw_results_and_say_when_there_are_none(fn):
    fig = fn(_fake_result())
    assert isinstance(fig, Figure) and fig._suptitle.get_text()
    ax = fig.axes[0]
    assert ax.get_xlabel()
    empty = fn({"source": "none", "topic": "scan", "message": "No GPU timings recorded for 'scan' yet"})
    assert isinstance(empty, Figure)
    assert any("No GPU timings" in t.get_text() for t in empty.axes[0].texts)


def test_bandwidth_bars_are_labelled_with_the_ratio_to_the_reference():
    fig = gpubench.plot_bandwidth(_fake_result())
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any("(reference)" in t for t in texts) and any("(10%)" in t for t in texts)


def test_run_topic_needs_exactly_one_reference():
    case = Case(name="a", impl="numba", prepare=lambda n: (lambda: None), bytes_moved=lambda n: 4 * n)
    module = types.SimpleNamespace(__name__="fake", REFERENCE="none", cases=lambda: [case])
    with pytest.raises(ValueError, match="exactly one reference"):
        run_topic(module, sweep=None, check_n=None)


def test_show_source_gives_the_real_kernel_with_its_version_comment():
    text = kernel_source(intro.vector_add_v2)
    assert text.startswith("# v2:") and "def vector_add_v2" in text and "@cuda.jit" in text
    assert show_source(intro.vector_add_v1).data == kernel_source(intro.vector_add_v1)


def test_launch_binding_names_an_unknown_implementation():
    from simtlab.gpubench.launch import IMPLS, bind

    with pytest.raises(ValueError, match="impl must be one of numba, cuda-c, not 'cuda'"):
        bind("cuda", "reduction", "reduce_v1_interleaved", 1, 256)
    assert IMPLS == ("numba", "cuda-c")


def test_every_kernel_a_benchmark_binds_exists_in_both_twins():
    """The benchmarks launch kernels by name from kernels/<topic>.py and kernels/<topic>.cu:
    every name they use must be a numba kernel and an extern "C" kernel of the .cu file."""
    import re
    from pathlib import Path

    from simtlab.gpubench import reduction, scan
    from simtlab.kernels import patterns as P

    repo = Path(__file__).resolve().parent.parent
    names = {
        "patterns": ["copy_v1_strided", "copy_v2_coalesced", "stencil1d_v1_global", "stencil1d_v2_shared",
                     "stencil2d_v1_global", "stencil2d_v2_shared", "gather_v1", "scatter_v1"]
                    + [P.TRANSPOSES[v].py_func.__name__ for v in (1, 2, 3, 4)],
        "reduction": [n for nb, c, _ in reduction.SUM_VERSIONS.values() for n in (nb, c) if n]
                     + [n for pair in reduction.VECMAT_VERSIONS.values() for n in pair] + ["vecmat_rows"],
        "scan": [v[0] for v in scan.VERSIONS.values()] + ["add_block_prefix"],
    }
    import importlib
    for topic, kernel_names in names.items():
        module = importlib.import_module(f"simtlab.kernels.{topic}")
        cu = (repo / "kernels" / f"{topic}.cu").read_text()
        exported = set(re.findall(r'extern "C" __global__ void\s+(?:__launch_bounds__\([^)]*\)\s*)?(\w+)\(', cu))
        for name in kernel_names:
            if not (topic == "reduction" and "float4" in name):      # v8/v9 are CUDA C only
                assert hasattr(getattr(module, name), "py_func"), f"{topic}.py has no kernel {name}"
            assert name in exported, f"{topic}.cu exports no kernel {name}"
