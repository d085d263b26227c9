"""Work and steps of the block scans against n, counted by the emulator."""

from __future__ import annotations

from ..analysis.complexity import work_and_steps
from .complexity import plot_work_steps

__all__ = ["scan_complexity_rows", "plot_scan_work_steps"]


def scan_complexity_rows(versions=("Hillis-Steele", "Blelloch"), sizes=(8, 16, 32, 64, 128, 256)) -> list[dict]:
    """One block of each version on n elements, for each n: rows for ``plot_work_steps``."""
    from ..widgets.scan import scan_block_run

    rows = []
    for n in sizes:
        for version in versions:
            ws = work_and_steps(scan_block_run(version, n), "temp")
            rows.append({"version": version, "n": n, "work": ws.work, "steps": ws.steps})
    return rows


def plot_scan_work_steps(versions=("Hillis-Steele", "Blelloch"), sizes=(8, 16, 32, 64, 128, 256)):
    """Hillis-Steele's n log n work in log n steps against Blelloch's O(n) work in 2 log n steps."""
    return plot_work_steps(scan_complexity_rows(versions, sizes),
                           title="Scan of one block: work and steps counted by the emulator")
