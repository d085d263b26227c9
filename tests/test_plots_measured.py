"""The figures and tables of the recorded GPU probes (simtlab/plots/measured.py), headless."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from simtlab.plots import measured as M


def _ncu_row(kernel, **kw):
    row = {"kernel": kernel, "time_ms": 1.0, "dram_read_gb": 0.5, "dram_write_gb": 0.25, "load_requests": 10,
           "load_sectors": 320, "store_requests": 10, "store_sectors": 40, "l1_hit_pct": 50.0,
           "shared_load_bank_conflicts": 7, "shared_store_bank_conflicts": 3, "dram_pct_of_peak": 60.0}
    return {**row, **kw}


def test_profile_table_computes_sectors_per_request_and_conflicts():
    rec = {"n": 2**26, "device": "H100 test", "date": "2026-01-01",
           "rows": [_ncu_row("copy v1 strided (CUDA C)"), _ncu_row("copy v2 coalesced (CUDA C)", load_sectors=40)]}
    text = M.profile_table(rec, ["v1"])
    lines = text.splitlines()
    assert "2^26" in lines[0] and len(lines) == 3
    fields = lines[2].split()
    assert fields[fields.index("32.0") + 1] == "4.0" and "10" in fields       # 320/10 loads, 40/10 stores, 7+3
    with pytest.raises(ValueError, match="no profiled kernel matches"):
        M.profile_table(rec, ["transpose"])


def test_l2_plot_draws_warm_and_cold_for_every_series():
    rec = {"bytes_per_element": 8, "device": "H100 test", "date": "2026-01-01",
           "series": {"device copy": {"sizes": [2**20, 2**24], "warm_gbps": [3000, 2900], "cold_gbps": [1500, 2900]},
                      "copy v2 kernel": {"sizes": [2**24, 2**20], "warm_gbps": [2300, 2500], "cold_gbps": [2300, 1200]}}}
    fig = M.plot_l2_warm_cold(rec)
    ax = fig.axes[0]
    assert isinstance(fig, Figure) and fig._suptitle.get_text() and ax.get_xlabel() and "GB/s" in ax.get_ylabel()
    assert len(ax.get_lines()) == 4 + 1                     # 2 series x warm/cold, and the L2 line
    kernel_warm = next(l for l in ax.get_lines() if l.get_label() == "copy v2 kernel, L2-warm")
    assert list(kernel_warm.get_xdata()) == [2**20, 2**24] and list(kernel_warm.get_ydata()) == [2500, 2300]


def test_vecmat_plot_gives_percent_of_gemv_and_marks_waves():
    rec = {"rows": 10, "cols": 1000, "sms": 4, "gemv_ms": 1.0, "cuda_c_blocks_per_sm": 8,
           "blocks_per_row": [2, 3, 4], "cuda_c_ms": [2.0, 1.0, 4.0], "numba_ms": [1.0, 1.0, 1.0]}
    fig = M.plot_vecmat_grid(rec)
    ax = fig.axes[0]
    cuda_c = next(l for l in ax.get_lines() if l.get_label() == "CUDA C")
    assert list(cuda_c.get_xdata()) == [20, 30, 40] and list(cuda_c.get_ydata()) == [50.0, 100.0, 25.0]
    waves = [l for l in ax.get_lines() if l.get_linestyle() == ":"]
    assert [l.get_xdata()[0] for l in waves] == [32]          # one wave = 8 x 4 blocks, up to 40 blocks
    assert "%" in ax.get_ylabel() and ax.get_xlabel()


def test_the_recorded_probes_are_in_the_store():
    for key in ("l2_warm_cold", "vecmat_grid", "ncu_profile", "copy_width", "cumsum", "atomics", "modulo"):
        rec = M.recorded_probe(key)
        assert rec["device"].startswith("NVIDIA H100")
    assert isinstance(M.plot_l2_warm_cold(M.recorded_probe("l2_warm_cold")), Figure)
    assert "transpose v3" in M.profile_table(M.recorded_probe("ncu_profile"), ["transpose"])
