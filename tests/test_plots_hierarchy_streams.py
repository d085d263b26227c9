"""The memory-hierarchy figure (chapter 3) and the stream timeline (chapter 1), headless."""

from __future__ import annotations

import pytest

from simtlab.plots.memory_hierarchy import h100_levels, plot_memory_hierarchy
from simtlab.plots.streams import makespan, plot_stream_timeline, stream_schedule


def test_memory_levels_fastest_first_and_sizes_from_the_chip():
    levels = h100_levels()
    names = [lv.name for lv in levels]
    assert names[0] == "registers" and names[-1].startswith("HBM")
    caps = {lv.name: lv.capacity_bytes for lv in levels}
    assert caps["registers"] == 65536 * 4 * 132             # 256 KiB per SM
    assert caps["L2 cache"] == 50 * 2**20
    assert caps["shared memory"] == 228 * 1024 * 132
    lat = {lv.name: lv.latency_ns for lv in levels}
    # the point of the figure, as measured: each level further out waits longer
    assert lat["registers"] < lat["shared memory"] < lat["L2 cache"] < lat["HBM (global, local)"]
    assert lat["L1 cache"] < lat["L2 cache"]


def test_memory_hierarchy_figure():
    fig = plot_memory_hierarchy()
    assert "H100" in fig._suptitle.get_text()
    assert all(ax.get_xlabel() for ax in fig.axes)
    assert any("[ns" in ax.get_xlabel() for ax in fig.axes) and any("[MiB" in ax.get_xlabel() for ax in fig.axes)


def test_one_stream_adds_up_and_chunks_overlap():
    one = stream_schedule(4.0, 4.0, 4.0)
    assert makespan(one) == pytest.approx(12.0)
    # 8 chunks on 4 streams: the three engines work at once after the first chunk's copy in
    many = stream_schedule(4.0, 4.0, 4.0, chunks=8, streams=4)
    assert makespan(many) == pytest.approx(4.0 + 2 * 4.0 / 8)
    # in one stream, chunking alone changes nothing: every operation waits for the one before
    assert makespan(stream_schedule(4.0, 4.0, 4.0, chunks=8, streams=1)) == pytest.approx(12.0)
    # a short kernel cannot hide long copies: the copies bound the time
    assert makespan(stream_schedule(5.0, 0.3, 5.0, chunks=8, streams=4)) >= 5.0
    with pytest.raises(ValueError, match="at least 1"):
        stream_schedule(1, 1, 1, chunks=0)


def test_stream_timeline_figure():
    fig = plot_stream_timeline(4.9, 4.0, 4.9)
    assert "model" in fig._suptitle.get_text()
    assert all(ax.get_xlabel() == "time [ms]" for ax in fig.axes)
