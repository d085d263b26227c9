"""The GPU benchmark's bookkeeping, without a GPU: recorded results, tables and plots."""

from __future__ import annotations

import json
import types

import numpy as np

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
    with pytest.raises(ValueError, match="benchmarked topics are patterns, scan, reduction, gemm"):
        gpubench.recorded("no_such_topic")


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


def test_every_kernel_of_every_table_exists_in_its_twins():
    """Each topic's table names its kernels in kernels/<topic>.py and kernels/<topic>.cu; every
    name a version or its plan launches must be a numba kernel and an extern "C" kernel."""
    import importlib
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    helpers = {"reduction": ["vecmat_rows"], "scan": ["add_block_prefix"], "patterns": [],
               "gemm": ["gemm_bias_act_seed", "gemm_bias_act"]}
    for topic in gpubench.TOPICS:
        module = importlib.import_module(f"simtlab.kernels.{topic}")
        cu = (repo / "kernels" / f"{topic}.cu").read_text()
        exported = set(re.findall(r'extern "C" __global__ void\s+(?:__launch_bounds__\([^)]*\)\s*)?(\w+)\(', cu))
        exported |= set(re.findall(r"^V8_KERNEL\((\w+),", cu, re.M))        # gemm.cu's template instances
        for name in re.findall(r"^V9_KERNEL\((\w+),", cu, re.M):          # v9: a float4 kernel and its scalar twin
            exported |= {name, name + "_scalar"}
        assert module.VERSIONS, topic
        for v in module.VERSIONS:
            assert v.label.split(" ", 1)[0].startswith("v") or " v" in v.label, v.label
            if v.numba:
                assert hasattr(getattr(module, v.numba), "py_func"), f"{topic}.py has no kernel {v.numba}"
            if v.cuda_c:
                assert v.cuda_c in exported, f"{topic}.cu exports no kernel {v.cuda_c}"
            assert v.bytes(2**20) > 0
        for name in helpers[topic]:
            assert hasattr(getattr(module, name), "py_func") and name in exported


def test_benchmark_cases_come_from_the_tables_with_flops():
    """One case per version and implementation, named after the table's label; FLOPs where the
    table has them (TFLOP/s in the results)."""
    from simtlab.kernels import reduction as R

    from simtlab.gpubench import reduction

    cases = {c.name: c for c in reduction.cases()}
    for v in R.VERSIONS:
        if v.group == "sum":
            for impl, label in (("cuda-c", "CUDA C"), ("numba", "numba")):
                assert (f"{v.label} ({label})" in cases) == (impl in v.impls)
    case = cases["v3 sequential (numba)"]
    assert case.flops(1000) == 1000 and case.bytes_moved(1000) == 4000


def test_summary_table_gives_tflops_where_flops_are_known():
    res = _fake_result()
    res["rows"][1]["tflops"] = 0.067
    text = gpubench.summary_table(res)
    assert "TFLOP/s" in text.splitlines()[0] and "0.067" in text.splitlines()[2]


def test_one_plan_runs_on_the_emulator_for_every_version():
    """The plans the GPU tests and the benchmark use also run on the emulator (NumPy arrays)."""
    from simtlab import versions
    from simtlab.kernels import patterns as P, reduction as R, scan as S

    x = np.random.default_rng(0).integers(-2, 3, 1000).astype(np.float32)
    for v in R.VERSIONS:
        if v.group == "sum" and v.numba:
            out, runs = versions.emulate("reduction", v, x, trace=False)
            assert out[0] == x.sum() and len(runs) >= 1, v.label
    out, runs = versions.emulate("scan", S.find(S.VERSIONS, "v6 lookback"), x, blockdim=32, trace=False)
    assert np.array_equal(out, np.cumsum(x)) and len(runs) == 1
    a = x[:960].reshape(30, 32)
    out, _ = versions.emulate("patterns", P.find(P.VERSIONS, "transpose v3 padded tile"), a, trace=False)
    assert np.array_equal(out, a.T)
    with pytest.raises(ValueError, match="exists only in CUDA C"):
        versions.emulate("reduction", R.find(R.VERSIONS, "v8 float4, atomicAdd"), x)


def test_numba_launches_follow_cupys_current_stream(monkeypatch):
    """A bound numba kernel launches on CuPy's current stream (what a CuPy stream capture
    records): numba's stream 0 while that is CuPy's default stream, else the stream wrapped by
    ``cuda.external_stream``, configured once per stream. Stand-ins for CuPy and numba's
    external stream: no GPU needed."""
    from numba import cuda

    from simtlab.gpubench.launch import _numba_on_cupy_stream

    current = types.SimpleNamespace(ptr=0)
    fake_cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(get_current_stream=lambda: current))
    monkeypatch.setitem(__import__("sys").modules, "cupy", fake_cupy)
    wrapped = []
    monkeypatch.setattr(cuda, "external_stream", lambda ptr: wrapped.append(ptr) or f"external {ptr}")

    class Jitted:
        configs = []

        def __getitem__(self, config):
            self.configs.append(config)
            return config

    jitted = Jitted()
    on_stream = _numba_on_cupy_stream(jitted, (3, 2), 128, 0, default_kernel="stream 0")
    assert on_stream() == "stream 0" and jitted.configs == []
    current.ptr = 0xBEEF
    assert on_stream() == ((3, 2), 128, "external 48879", 0)
    assert on_stream() == ((3, 2), 128, "external 48879", 0) and wrapped == [0xBEEF]      # configured once
    current.ptr = 0
    assert on_stream() == "stream 0"
