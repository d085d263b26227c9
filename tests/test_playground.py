"""The kernel playground on kernels written here, never seen by the course: 1-D to
3-D launches, shared memory, atomics, warp shuffles, a race, a kernel that raises, a launch
large enough to be sampled. Every tab is drawn headless and its content checked."""

from __future__ import annotations

from pathlib import Path

import ipywidgets as widgets
import numpy as np
import pytest
from numba import cuda

import simtlab
from simtlab.html_theme import ERROR_MARK
from simtlab.playground import Playground, playground
from simtlab.playground.progress import Progress
from load_support import generous

PNG = b"\x89PNG\r\n\x1a\n"


@cuda.jit
def scale_1d(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = 3 * x[i]


@cuda.jit
def strided_copy(x, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[(i * 8) % x.size]


@cuda.jit
def add_2d(a, b, c):
    row, col = cuda.grid(2)
    if row < c.shape[0] and col < c.shape[1]:
        c[row, col] = a[row, col] + b[row, col]


@cuda.jit
def fill_3d(out):
    x, y, z = cuda.grid(3)
    if x < out.shape[2] and y < out.shape[1] and z < out.shape[0]:
        out[z, y, x] = x + 10 * y + 100 * z


@cuda.jit
def column_sums(m, out):
    # rows written across the lanes (no conflict), then read down a column: lane t reads
    # tile[t, r], 32 floats apart, so every lane of the warp hits the same bank
    tile = cuda.shared.array((32, 32), np.float32)
    t = cuda.threadIdx.x
    for r in range(32):
        tile[r, t] = m[r, t]
    cuda.syncthreads()
    s = 0.0
    for r in range(32):
        s += tile[t, r]
    out[t] = s


@cuda.jit
def histogram(values, bins):
    i = cuda.grid(1)
    if i < values.size:
        cuda.atomic.add(bins, values[i] % bins.size, 1)


@cuda.jit
def warp_total(x, out):
    i = cuda.grid(1)
    v = x[i]
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        offset //= 2
    if cuda.laneid == 0:
        out[i // 32] = v


@cuda.jit
def racy_sum(x, total):
    i = cuda.grid(1)
    if i < x.size:
        total[0] = total[0] + x[i]


@cuda.jit
def reads_past_the_end(x, out):
    i = cuda.grid(1)
    out[i] = x[i + 1]


@cuda.jit
def half_idle(x, out):
    i = cuda.grid(1)
    if i % 2 == 0:
        out[i] = x[i]
    else:
        out[i] = -x[i]


def _drawn(pg):
    pg.draw_all()
    return {title: box for title, box in zip(pg.tabs.titles, pg.tabs.children)}


def _pngs(box):
    return [bytes(c.value) for c in box.children if isinstance(c, widgets.Image)]


def _html(box):
    return "".join(c.value for c in box.children if isinstance(c, widgets.HTML))


def test_contract_run_tabs_relaunch_compare():
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros_like(x)
    pg = simtlab.playground(scale_1d, 8, 128, x, out)
    assert isinstance(pg, Playground)
    assert isinstance(pg.run, simtlab.Run) and pg.error is None
    assert np.array_equal(out, 3 * x), "the first run updates the caller's arrays, as a launch does"
    assert isinstance(pg.tabs, widgets.Tab)
    assert list(pg.tabs.titles) == ["mapping", "memory", "divergence", "races & errors", "barriers", "source",
                                    "GPU", "compare"]
    first = pg.run
    assert pg.relaunch(blockdim=64) is pg
    assert pg.previous is first and pg.run.blockdim == (64, 1, 1) and pg.run.griddim == (8, 1, 1)
    # 8 x 64 threads cover 512 of the 1000 elements: the rest stay 0 in this run's output
    assert np.array_equal(pg.outputs["out"][:512], 3 * x[:512]) and not pg.outputs["out"][512:].any()
    assert np.array_equal(out, 3 * x), "a re-run works on copies, the caller's arrays keep the first result"
    c = pg.compare()
    assert c["threads"]["before"] == 1024 and c["threads"]["after"] == 512 and c["threads"]["delta"] == -512
    other = playground(scale_1d, 4, 256, x, np.zeros_like(x))
    assert pg.compare(other)["threads"]["before"] == 1024
    assert "<table" in c._repr_html_()


def test_relaunch_rejects_an_unknown_parameter():
    pg = playground(scale_1d, 1, 32, np.ones(32, np.float32), np.zeros(32, np.float32))
    with pytest.raises(TypeError, match="no parameter 'y'.*x, out"):
        pg.relaunch(y=np.ones(4))


def test_relaunch_with_new_arguments_by_name():
    pg = playground(scale_1d, 1, 32, np.ones(32, np.float32), np.zeros(32, np.float32))
    pg.relaunch(x=np.full(32, 2, np.float32))
    assert np.array_equal(pg.outputs["out"], np.full(32, 6, np.float32))


def test_mapping_tab_shows_who_wrote_and_who_read():
    x = np.arange(100, dtype=np.float32)
    pg = playground(scale_1d, 4, 32, x, np.zeros_like(x))
    tabs = _drawn(pg)
    mapping = pg._tabs[0]
    assert mapping.array.options == ("x", "out")
    assert mapping.kind.value == "read", "x is only read: the tab shows reads for it"
    before = bytes(mapping.figure.value)
    assert before.startswith(PNG)
    mapping.array.value = "out"
    assert mapping.kind.value == "write"
    assert bytes(mapping.figure.value) != before
    assert "100 writes" in mapping.summary.value and "0 reads" in mapping.summary.value
    assert _pngs(tabs["mapping"])


def test_memory_tab_tells_coalesced_from_strided():
    x = np.arange(4096, dtype=np.float32)
    good = _html(_drawn(playground(scale_1d, 4, 128, x[:512].copy(), np.zeros(512, np.float32)))["memory"])
    assert "coalesced" in good and "uncoalesced" not in good
    bad_pg = playground(strided_copy, 4, 128, x, np.zeros(512, np.float32))
    bad = _html(_drawn(bad_pg)["memory"])
    assert "uncoalesced" in bad and "8.0x the sectors needed" in bad
    assert len(_pngs(bad_pg.tabs.children[1])) == 2, "cost per line, then the costliest request lane by lane"


def test_memory_tab_counts_bank_conflicts():
    m = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    out = np.zeros(32, np.float32)
    pg = playground(column_sums, 1, 32, m, out)
    assert np.allclose(out, m.sum(axis=1))
    html = _html(_drawn(pg)["memory"])
    assert "shared memory" in html
    row = next(r for r in __import__("simtlab.plots.memory_requests", fromlist=["x"]).request_table(pg.run)
               if r["space"] == "shared" and r["kind"] == "read")
    assert row["wavefronts"] == 32.0 and row["bank_conflicts"] == 31 * 32
    memory = pg._tabs[1]
    labels = [label for label, _ in memory.request.options]
    assert labels[0].startswith("the costliest global request") and \
        labels[1].startswith("the most conflicted shared request: warp 0, line"), labels
    assert len(_pngs(pg.tabs.children[1])) == 2, "costs, then the costliest global request lane by lane"
    lanes = bytes(memory.detail.value)
    memory.request.value = memory.request.options[1][1]
    banks = bytes(memory.detail.value)
    assert banks.startswith(PNG) and banks != lanes
    assert bytes(memory.detail.value) == banks and memory.request.value[0] == "shared"
    pg.tabs.selected_index = 1
    pg.relaunch(griddim=2)                              # a re-run keeps the space chosen
    assert pg.run.griddim == (2, 1, 1) and memory.request.value[0] == "shared"


def test_divergence_tab_lists_the_least_efficient_warp_first():
    x = np.ones(64, np.float32)
    pg = playground(half_idle, 1, 64, x, np.zeros_like(x))
    tabs = _drawn(pg)
    div = pg._tabs[2]
    # 4 warp instructions: i = ..., the if (32 lanes each), then each branch with 16 lanes
    assert div.warp.options[0][0].endswith("75%"), div.warp.options
    assert pg.run.metrics["simt_efficiency"] < 1
    assert "SIMT efficiency of the whole run" in _html(tabs["divergence"])
    assert _pngs(tabs["divergence"])[0].startswith(PNG)


def test_2d_launch():
    a = np.arange(20 * 24, dtype=np.float32).reshape(20, 24)
    b = np.ones_like(a)
    c = np.zeros_like(a)
    pg = playground(add_2d, (2, 3), (16, 8), a, b, c)
    assert np.array_equal(c, a + 1)
    assert pg.controls["block"].value == (16, 8) and (8, 8) in [v for _, v in pg.controls["block"].options]
    tabs = _drawn(pg)
    assert all(_pngs(tabs[t]) for t in ("mapping", "divergence", "barriers"))
    pg.controls["block"].value = (8, 8)
    assert pg.run.blockdim == (8, 8, 1)


def test_3d_launch():
    out = np.zeros((4, 6, 8), np.int32)
    pg = playground(fill_3d, (1, 2, 2), (8, 4, 2), out)
    z, y, x = np.indices(out.shape)
    assert np.array_equal(out, x + 10 * y + 100 * z)
    tabs = _drawn(pg)
    assert _pngs(tabs["mapping"])[0].startswith(PNG)
    assert pg.run.griddim == (1, 2, 2)


def test_atomics_are_not_races():
    values = np.arange(256, dtype=np.int32)
    bins = np.zeros(8, np.int32)
    pg = playground(histogram, 2, 128, values, bins)
    assert np.array_equal(bins, np.full(8, 32))
    assert pg.run.metrics["races"] == 0
    assert "no race" in _html(_drawn(pg)["races & errors"])
    pg._tabs[0].array.value = "bins"
    assert pg._tabs[0].kind.value == "atomic"


def test_warp_shuffle_kernel():
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(2, np.float32)
    pg = playground(warp_total, 1, 64, x, out)
    assert np.array_equal(out, [x[:32].sum(), x[32:].sum()])
    assert "warp_total" in _html(_drawn(pg)["source"])


def test_race_is_listed_with_both_threads_and_lines_highlighted():
    x = np.ones(64, np.float32)
    pg = playground(racy_sum, 2, 32, x, np.zeros(1, np.float32))
    assert pg.run.metrics["races"] >= 1
    html = _html(_drawn(pg)["races & errors"])
    line = racy_sum.py_func.__code__.co_firstlineno + 4     # total[0] = total[0] + x[i] (after the decorator)
    assert f"on line {line}" in html and "thread (" in html
    assert f"background:{ERROR_MARK}" in html and "races on total" in html
    assert "1 race" in pg.banner.value


def test_a_kernel_that_raises_shows_the_card_and_the_tabs_that_still_make_sense():
    x = np.zeros(64, np.float32)
    pg = playground(reads_past_the_end, 1, 64, x, np.zeros_like(x))
    assert isinstance(pg.error, simtlab.OutOfBoundsError)
    assert pg.tabs.selected_index == 3, "the error card's tab is shown"
    tabs = _drawn(pg)
    card = _html(tabs["races & errors"])
    assert "out-of-bounds access" in card and "<b>thread</b>" in card and "<b>fix:</b>" in card
    assert "Traceback" not in card
    # the partial trace (up to the fault) still draws
    assert pg.run is not None and len(pg.run.memory) > 0
    assert _pngs(tabs["mapping"]) and "reads_past_the_end" in _html(tabs["source"])
    assert "the emulator found an error" in _html(tabs["GPU"])


def test_a_launch_error_shows_the_card():
    pg = playground(scale_1d, 1, 2048, np.ones(8, np.float32), np.zeros(8, np.float32))
    assert isinstance(pg.error, simtlab.LaunchError) and pg.run is None
    tabs = _drawn(pg)
    assert "launch error" in _html(tabs["races & errors"])
    assert "did not start" in _html(tabs["mapping"])


def test_large_launch_is_sampled_and_says_so():
    n = 64 * 256
    x = np.ones(n, np.float32)
    out = np.zeros_like(x)
    pg = playground(scale_1d, 64, 256, x, out, max_traced_threads=1024)
    assert np.array_equal(out, 3 * x), "the untraced blocks ran too"
    assert pg.run.traced_blocks == 4 and pg.run.num_blocks == 64
    assert set(np.unique(pg.run.memory.block)) == {0, 1, 2, 3}
    assert "sampled" in pg.banner.value and "blocks 0-3 of 64" in pg.banner.value


def test_progress_bar_appears_only_after_a_second():
    bar = widgets.IntProgress(layout=widgets.Layout(display="none"))
    p = Progress(bar, show_after=0.0)
    p(3, 10)
    assert bar.layout.display == "" and bar.value == 3 and bar.max == 10
    p.close()
    assert bar.layout.display == "none"
    quick = Progress(bar, show_after=60.0)
    quick(1, 10)
    assert quick.updates == 0 and bar.layout.display == "none"


def test_a_long_run_fills_the_progress_bar_block_by_block(monkeypatch):
    import simtlab.playground.progress as progress
    monkeypatch.setattr(progress, "SHOW_AFTER_S", 0.0)       # as if every block took a second
    seen = []
    monkeypatch.setattr(progress.Progress, "__call__",
                        lambda self, d, t, call=progress.Progress.__call__: (seen.append((d, t)), call(self, d, t)))
    x = np.ones(16 * 64, np.float32)
    pg = playground(scale_1d, 16, 64, x, np.zeros_like(x), max_traced_threads=256)   # sampled
    assert seen[-1] == (16, 16) and len(seen) == 16
    assert pg.progress_bar.max == 16 and pg.progress_bar.value == 16
    assert pg.progress_bar.layout.display == "none", "hidden again once the run is over"
    assert pg.run.engine == "vector"                         # sampled runs stay on the fast engine
    seen.clear()
    pg = playground(scale_1d, 16, 64, x, np.zeros_like(x))     # whole launch traced, vector engine
    assert pg.run.engine == "vector" and seen[-1] == (16, 16)


def test_controls_rerun_and_cache():
    x = np.arange(256, dtype=np.float32)
    pg = playground(scale_1d, 2, 128, x, np.zeros_like(x))
    pg.controls["grid"].value = 1
    assert pg.run.griddim == (1, 1, 1) and pg.previous.griddim == (2, 1, 1)
    assert "<table" in _html(_drawn(pg)["compare"])
    pg.controls["size"].value = 512
    assert pg.run.array("x").shape == (512,) and pg.size == 512
    x512 = pg.outputs["x"].copy()
    pg.controls["size"].value = 256
    cached = pg.run
    pg.controls["size"].value = 512
    assert np.array_equal(pg.outputs["x"], x512), "the inputs of a size are made once"
    pg.controls["size"].value = 256
    assert pg.run is cached, "a setting seen before is not emulated again"
    # grid 1 x block 128 since the grid change: the first 128 elements, from these inputs
    assert np.array_equal(pg.outputs["out"][:128], 3 * pg.inputs[0][:128]), "the cached run belongs to these inputs"


def test_resize_changes_a_length_parameter_too():
    @cuda.jit
    def first_n(x, out, n):
        i = cuda.grid(1)
        if i < n:
            out[i] = x[i]

    pg = playground(first_n, 4, 64, np.ones(100, np.float32), np.zeros(100, np.float32), 100)
    pg.resize(200)
    assert pg.inputs[2] == 200 and pg.run.array("out").shape == (200,)
    assert pg.outputs["out"][:200].all()


def test_gpu_tab_without_a_gpu_says_why():
    pg = playground(scale_1d, 1, 32, np.ones(32, np.float32), np.zeros(32, np.float32), gpu=False)
    assert "no GPU run" in _html(_drawn(pg)["GPU"])


def test_gpu_tab_with_a_fake_gpu_compares_and_times(monkeypatch):
    import simtlab.playground.gpu as gpu

    def fake_launcher(kernel, griddim, blockdim, args, shared_bytes):
        def launch():
            simtlab.emulate(kernel, griddim, blockdim, *args, trace=False)
        return launch, lambda: [a.copy() if isinstance(a, np.ndarray) else None for a in args]

    real = gpu.gpu_check
    monkeypatch.setattr(gpu, "gpu_check", lambda *a, **k: real(*a, **k, launcher=fake_launcher,
                                                                timer=lambda fn, r: {"median_ms": 0.5, "min_ms": 0.4}))
    x = np.ones(1024, np.float32)
    pg = playground(scale_1d, 8, 128, x, np.zeros_like(x), gpu=True, nbytes=8 * 1024)
    html = _html(_drawn(pg)["GPU"])
    assert "GPU and emulator agree" in html and "0.5000 ms" in html
    assert "0.0 GB/s" in html or "GB/s" in html
    result, _ = pg.gpu_result()
    assert result["gbps"] == pytest.approx(8 * 1024 / 0.5e-3 / 1e9)


def test_latency_benchmark_times_a_tab():
    """benchmarks/playground_latency.py runs (its figures are measured there, not here)."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "playground_latency.py"
    spec = importlib.util.spec_from_file_location("playground_latency", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    kernel, args = bench.kernels()["vector_add"]
    row = bench.time_tab(kernel, args, tab=5, repeat=1)
    assert row["tab"] == "source" and row["cold_ms"]["median"] > 0 and row["cached_ms"]["n"] >= 2


def test_prefetch_makes_the_neighbouring_launches_cache_hits():
    x = np.arange(512, dtype=np.float32)
    pg = playground(scale_1d, 4, 128, x, np.zeros_like(x), prefetch=True).wait_for_prefetch(120)
    size = 512
    expected = {((4, 1, 1), (96, 1, 1), size), ((4, 1, 1), (256, 1, 1), size),
                ((2, 1, 1), (128, 1, 1), size), ((8, 1, 1), (128, 1, 1), size)}
    assert expected <= set(pg._cache), sorted(pg._cache)
    prefetched = pg._cache[((4, 1, 1), (256, 1, 1), size)][0]
    pg.controls["block"].value = 256
    assert pg.run is prefetched and pg.run.blockdim == (256, 1, 1)
    assert np.array_equal(pg.outputs["out"], 3 * x)
    assert (id(prefetched), "x", "read", "block") in pg._tabs[0]._memo, "its mapping was drawn ahead"
    assert bytes(pg.figure.value).startswith(PNG)
    pg.wait_for_prefetch(120)


def test_a_change_during_prefetch_wins():
    x = np.arange(512, dtype=np.float32)
    pg = playground(scale_1d, 4, 128, x, np.zeros_like(x), prefetch=True)
    pg.controls["grid"].value = 2            # while the prefetch of the first run may still go on
    pg.relaunch(x=np.ones(512, np.float32))
    pg.wait_for_prefetch(120)
    assert pg.run.griddim == (2, 1, 1)
    assert np.array_equal(pg.outputs["out"][:256], np.full(256, 3, np.float32))
    for run, error, outputs, _ in pg._cache.values():
        assert np.array_equal(outputs["x"], np.ones(512, np.float32)), "no run of the old input was kept"


def test_a_prefetch_running_at_exit_is_stopped_and_joined():
    """Python's exit stops a prefetch at its next step and joins it (a thread killed inside the
    emulator's greenlets can abort the process); checked in a fresh interpreter."""
    import subprocess
    import sys
    code = ("import numpy as np\nfrom numba import cuda\nfrom simtlab.playground import playground\n"
            "import simtlab.playground.session as session\n"
            "@cuda.jit\ndef k(x, out):\n    i = cuda.grid(1)\n    if i < x.size:\n        out[0] = out[0] + x[i]\n"
            "x = np.ones(2048, np.float32)\npg = playground(k, 8, 256, x, np.zeros(1, np.float32), prefetch=True)\n"
            "assert pg._prefetch_thread.is_alive()\n"
            "session._stop_prefetches()           # what atexit runs\n"
            "print('alive after exit handler:', pg._prefetch_thread.is_alive(), 'prefetched:', len(pg._cache) - 1)\n")
    path = Path(__file__).parent / "_prefetch_exit_probe.py"
    path.write_text(code)
    try:
        done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                              timeout=generous(300))
    finally:
        path.unlink()
    assert done.returncode == 0 and "terminate called" not in done.stderr, done.stderr[-2000:]
    assert "alive after exit handler: False prefetched: " in done.stdout, done.stdout
    assert not done.stdout.strip().endswith("prefetched: 4"), "the exit stopped it before all four neighbours"


def test_prefetch_is_off_outside_a_jupyter_kernel():
    pg = playground(scale_1d, 1, 32, np.ones(32, np.float32), np.zeros(32, np.float32))
    assert pg.prefetch is False and pg._prefetch_thread is None


def test_prefetch_draws_the_tab_in_view():
    x = np.arange(512, dtype=np.float32)
    pg = playground(scale_1d, 4, 128, x, np.zeros_like(x), prefetch=True).wait_for_prefetch(120)
    pg.tabs.selected_index = 4                # barriers
    pg.wait_for_prefetch(120)
    neighbour = pg._cache[((4, 1, 1), (256, 1, 1), 512)][0]
    assert (id(neighbour), 0) in pg._tabs[4]._memo
    pg.tabs.selected_index = 1                # memory
    pg.wait_for_prefetch(120)
    assert (id(neighbour),) in pg._tabs[1]._memo
    pg.controls["block"].value = 256
    assert pg.run is neighbour and len(_pngs(pg.tabs.children[1])) == 2
    pg.wait_for_prefetch(120)


@cuda.jit
def waits_for_a_flag(flag, out):
    i = cuda.grid(1)
    while flag[0] == 0:               # nothing sets the flag
        out[i] += 1


def test_the_playground_passes_the_limits_and_its_card_says_how_to_raise_them_there():
    from simtlab.plots.run_report import error_card_html
    flag, out = np.zeros(1, np.int32), np.zeros(32, np.int32)
    pg = playground(waits_for_a_flag, 1, 32, flag, out, max_iterations=300)
    err = pg.error
    assert isinstance(err, simtlab.RunawayKernelError)
    assert (err.limit, err.count, err.thread) == ("max_iterations", 300, (0, 0, 0))
    # the fix names the parameter as it is passed here, with a value that allows more
    assert err.fix.endswith("simtlab.playground(..., max_iterations=1_200)")
    assert "simtlab.playground(..., max_iterations=1_200)" in error_card_html(err)
    assert pg.tabs.selected_index == 3, "the error card is in view"
    # the wall-clock backstop passes through too, and its card says it is wall-clock
    pg = playground(waits_for_a_flag, 1, 32, flag, out, max_iterations=10**15, time_limit=0.2)
    assert pg.error.limit == "time_limit" and "wall-clock" in pg.error.problem
    assert pg.error.fix.endswith("simtlab.playground(..., time_limit=0.8)")
    # and a correct launch runs with no wall-clock limit at all
    pg = playground(scale_1d, 2, 32, np.ones(64, np.float32), np.zeros(64, np.float32),
                    time_limit=None)
    assert pg.error is None and np.all(pg.outputs["out"] == 3)


def test_the_progress_bar_counts_blocks_and_estimates_the_time_left(monkeypatch):
    import simtlab.playground.progress as progress
    now = [0.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: now[0])
    bar = widgets.IntProgress(layout=widgets.Layout(display="none"))
    p = Progress(bar, show_after=1.0)
    texts = []
    for t, done in ((2.0, 1), (10.0, 5), (12.0, 1), (13.0, 2), (22.0, 10)):
        now[0] = t
        p(done, 10)
        texts.append(bar.description)
    assert texts == [
        "1/10 blocks, ~18 s left",      # 2 s for the first block, 9 to go
        "5/10 blocks, ~10 s left",      # 2 s a block
        "1/10 blocks",                  # the greenlet engine runs the launch again: no rate yet
        "2/10 blocks, ~8 s left",       # 1 s a block since it started again
        "10/10 blocks"]
    now[0] = 3.0
    long = Progress(bar, show_after=0.0)
    now[0] = 6.0
    long(1, 1001)
    assert bar.description == "1/1001 blocks, ~50 min left"
