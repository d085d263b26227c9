"""The device panel: the GPU's properties, or an H100's reference figures when there is none."""

from __future__ import annotations

import html

from ..hardware import H100_SXM


def device_table(props) -> list[tuple[str, str]]:
    kib = 1024
    return [
        ("GPU", props.name),
        ("compute capability", ".".join(str(v) for v in props.compute_capability)),
        ("streaming multiprocessors (SMs)", str(props.multiprocessors)),
        ("warp size", f"{props.warp_size} threads"),
        ("max threads per block", str(props.max_threads_per_block)),
        ("max resident threads / warps / blocks per SM",
         f"{props.max_threads_per_sm} / {props.max_warps_per_sm} / {props.max_blocks_per_sm}"),
        ("registers per SM", f"{props.registers_per_sm:,} x 32-bit"),
        ("shared memory per SM", f"{props.shared_memory_per_sm // kib} KiB"),
        ("shared memory per block", f"{props.shared_memory_per_block // kib} KiB "
                                    f"({props.shared_memory_per_block_optin // kib} KiB opt-in)"),
        ("L2 cache", f"{props.l2_cache_bytes / 2**20:.0f} MiB"),
        ("memory", f"{props.memory_gib:g} GiB"),
        ("peak memory bandwidth", f"{props.memory_bandwidth_gbs:,.0f} GB/s"
         if props.memory_bandwidth_gbs else "not reported"),
        ("SM clock", f"{props.clock_mhz:,.0f} MHz"),
        ("source", props.source),
    ]


def device_panel_html(props=None) -> str:
    """HTML table of the real GPU (``props``) or, with None, of the H100 reference."""
    if props is None:
        head = ("<b>Reference figures (no GPU here): NVIDIA H100 SXM</b><br>"
                "Your kernels run in the SIMT Lab emulator on the CPU: warps of 32 lanes, and the "
                "same launch limits (1024 threads per block, 48 KiB static shared memory) are "
                "checked at every launch.")
        props = H100_SXM
    else:
        head = f"<b>This machine's GPU: {html.escape(props.name)}</b>"
    rows = "".join(f"<tr><td style='text-align:left;padding-right:1em'>{html.escape(k)}</td>"
                   f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
                   for k, v in device_table(props))
    return f"<div>{head}<table>{rows}</table></div>"
