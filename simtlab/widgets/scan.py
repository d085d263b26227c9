"""Scan widget: pick a block-level scan and a size, see its barrier epochs from the emulator's trace.

The picture is ``simtlab.plots.epochs.plot_epochs`` of the kernel's shared array; the summary
gives the work and steps counted from the same trace, the shared-memory wavefronts per request
(bank conflicts) and the data races the emulator found.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from ..html_theme import ERROR, SUCCESS, coloured
from .figure_image import FigureImage, figure_to_png, panel

__all__ = ["scan_widget", "SCAN_VERSIONS", "scan_block_run"]

#: dropdown label -> (kernel name in simtlab.kernels.scan, threads for n elements, shared array drawn)
SCAN_VERSIONS = {
    "in place (racy)": ("scan_in_place_racy", lambda n: n, "temp"),
    "Hillis-Steele": ("scan_v1_hillis_steele", lambda n: n, "temp"),
    "Blelloch": ("scan_v2_blelloch", lambda n: n // 2, "temp"),
    "Blelloch padded": ("scan_v3_blelloch_padded", lambda n: n // 2, "temp"),
    "warp shuffle": ("scan_v4_warp_shuffle", lambda n: n, "warp_sums"),
}
SIZES = (8, 16, 32, 64)
#: the warp-shuffle scan needs whole warps; it is shown on 4 of them whatever n is
WARP_SHUFFLE_N = 128


def scan_block_run(version: str, n: int):
    """Emulate one block of ``version`` on n elements of {-2, -1, 1, 2} (seeded); returns the Run."""
    from .. import emulate
    from ..kernels import scan as S

    if version not in SCAN_VERSIONS:
        raise ValueError(f"unknown version {version!r}: pick one of {', '.join(SCAN_VERSIONS)}")
    name, threads_of, _ = SCAN_VERSIONS[version]
    if version == "warp shuffle":
        n = WARP_SHUFFLE_N
    kernel = getattr(S, name)
    threads = threads_of(n)
    x = np.random.default_rng(n).choice(np.array([-2, -1, 1, 2], np.float32), n)
    out = np.zeros(n, np.float32)
    sums = np.zeros(1, np.float32)
    run = emulate(kernel, 1, threads, x, out, sums, shared_bytes=S.shared_bytes(kernel, threads))
    run.scan_ok = bool(np.array_equal(out, np.cumsum(x)))
    run.scan_n = n
    return run


def _summary(version: str, run) -> str:
    from ..analysis.complexity import work_and_steps

    _, _, array = SCAN_VERSIONS[version]
    ws = work_and_steps(run, array)
    m = run.metrics
    wave = m["shared_wavefronts_per_request"]
    races = len(run.races)
    verdict = coloured("right", SUCCESS) if run.scan_ok else coloured("wrong", ERROR, bold=True)
    race_txt = (coloured(f"{races} racy elements", ERROR, bold=True) if races
                else "no races")
    what = ("combining writes to warp_sums (the 32-lane scans are shuffles: no memory)"
            if version == "warp shuffle" else "combining writes to temp")
    return (f"<b>{version}</b>, n = {run.scan_n}, {run.threads_per_block} threads: result {verdict}; "
            f"work <b>{ws.work}</b> {what}, in <b>{ws.steps}</b> barrier steps; "
            f"shared memory <b>{wave:.2f}</b> wavefronts per request "
            f"({m['shared_bank_conflicts']} extra from bank conflicts); {race_txt}")


def scan_widget(version: str = "Hillis-Steele", n: int = 16):
    """Dropdown ``version`` (the block-level scans) and ``n`` (elements): epochs, work, steps, banks.

    Each (version, n) is emulated and drawn once, then cached; every run of the default size
    is made when the widget is built, so switching versions only swaps cached images.
    """
    from ..plots.epochs import plot_epochs

    if n not in SIZES:
        raise ValueError(f"n = {n}: pick one of {SIZES} (small, so that every cell can be labelled)")
    cache: dict = {}

    def get(v, size):
        key = (v, WARP_SHUFFLE_N if v == "warp shuffle" else size)
        if key not in cache:
            run = scan_block_run(v, size)
            array = SCAN_VERSIONS[v][2]
            fig = plot_epochs(run, array, title=f"{v}: {array} after each barrier epoch (n = {run.scan_n})")
            cache[key] = (figure_to_png(fig, layout_key="scan_widget"), _summary(v, run))
        return cache[key]

    for v in SCAN_VERSIONS:
        get(v, n)

    pick = widgets.Dropdown(options=list(SCAN_VERSIONS), value=version, description="version")
    size = widgets.Dropdown(options=list(SIZES), value=n, description="n")
    summary = widgets.HTML()
    view = FigureImage()

    def redraw(*_):
        png, text = get(pick.value, size.value)
        view.value = png
        summary.value = text

    pick.observe(redraw, names="value")
    size.observe(redraw, names="value")
    redraw()
    return panel([pick, size], view, summary, version=pick, n=size)
