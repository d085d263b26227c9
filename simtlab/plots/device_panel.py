"""The device panel: the GPU's properties, or an H100's reference figures when there is none."""

from __future__ import annotations

import html

from ..hardware import H100_SXM


def memory_text(n_bytes: int) -> str:
    """Device memory in both units: GiB (2^30 bytes, what tools print) and GB (10^9 bytes, what the
    box says). The H100 "80GB" reports 79.2 GiB = 85.0 GB: neither number is 80."""
    if not n_bytes:
        return "not reported"
    return f"{n_bytes / 2**30:.1f} GiB = {n_bytes / 1e9:.1f} GB usable"


def device_table(props) -> list[tuple[str, str]]:
    """(label, value) rows, values as text with their units."""
    kib = 1024
    return [
        ("GPU", props.name),
        ("compute capability", ".".join(str(v) for v in props.compute_capability)),
        ("streaming multiprocessors (SMs)", str(props.multiprocessors)),
        ("warp size", f"{props.warp_size} threads"),
        ("max threads per block", str(props.max_threads_per_block)),
        ("max block shape (x, y, z)", " x ".join(str(d) for d in props.max_block_dim)),
        ("max grid shape (x, y, z)", " x ".join(f"{d:,}" for d in props.max_grid_dim)),
        ("max resident threads / warps / blocks per SM",
         f"{props.max_threads_per_sm} / {props.max_warps_per_sm} / {props.max_blocks_per_sm}"),
        ("registers per SM", f"{props.registers_per_sm:,} x 32-bit"),
        ("max registers per thread", str(props.max_registers_per_thread)),
        ("shared memory per SM", f"{props.shared_memory_per_sm // kib} KiB"),
        ("shared memory per block", f"{props.shared_memory_per_block // kib} KiB "
                                    f"({props.shared_memory_per_block_optin // kib} KiB opt-in)"),
        ("L2 cache", f"{props.l2_cache_bytes / 2**20:.0f} MiB"),
        ("device memory", memory_text(props.memory_bytes)),
        ("peak memory bandwidth", f"{props.memory_bandwidth_gbs:,.0f} GB/s"
         if props.memory_bandwidth_gbs else "not reported"),
        ("SM clock", f"{props.clock_mhz:,.0f} MHz"),
        ("source", props.source),
    ]


EMULATOR_NOTE = (
    "Your kernels run in the SIMT Lab emulator on the CPU: warps of 32 lanes, and the same "
    "launch limits (1024 threads per block, 48 KiB static shared memory per block) are "
    "checked at every launch."
)


def device_panel_html(props=None) -> str:
    """HTML table of a GPU's properties.

    ``props=None`` means there is no GPU: the H100 reference figures are shown, labelled as
    such, with a note on the emulator. ``simtlab.widgets.device_panel`` passes
    ``hardware.query_device()``, which is None exactly then.
    """
    if props is None:
        head = f"<b>Reference figures (no GPU here): NVIDIA H100 SXM</b><br>{EMULATOR_NOTE}"
        props = H100_SXM
    elif props.source.startswith("measured"):
        head = f"<b>This machine's GPU: {html.escape(props.name)}</b>"
    else:  # reference figures passed in on purpose, e.g. H100_SXM on a machine with a GPU
        head = f"<b>Reference figures: {html.escape(props.name)}</b>"
    rows = "".join(f"<tr><td style='text-align:left;padding-right:1em'>{html.escape(k)}</td>"
                   f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
                   for k, v in device_table(props))
    return f"<div>{head}<table>{rows}</table></div>"
