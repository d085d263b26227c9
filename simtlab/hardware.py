"""What a GPU offers a kernel: its limits, and how many blocks of a kernel fit on one SM.

``H100_SXM`` holds reference figures, so that every chapter can talk about a real chip on
a machine without one; ``query_device()`` reads the same figures from the GPU in hand.
``occupancy()`` does what NVIDIA's occupancy calculator does: it finds how many blocks of
a given size and resource use one SM can hold at once, and which resource runs out first.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

# The resources that can cap blocks per SM, in the order a tie is reported: when several
# bind at once, the first one here is the one a student is told about.
LIMITS = ("threads", "warps", "blocks", "registers", "shared memory")


@dataclass(frozen=True)
class DeviceProperties:
    """Limits and sizes of one GPU, as the CUDA programming guide names them.

    Sizes are in bytes unless the name says otherwise.
    """

    name: str
    compute_capability: tuple[int, int]
    multiprocessors: int
    warp_size: int
    max_threads_per_block: int
    max_block_dim: tuple[int, int, int]
    max_grid_dim: tuple[int, int, int]
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    max_registers_per_thread: int
    register_allocation_unit: int  # registers are handed to a warp in chunks this big
    shared_memory_per_sm: int
    shared_memory_per_block: int  # static limit without opting in (48 KiB)
    shared_memory_per_block_optin: int  # what a kernel may ask for with an attribute
    l2_cache_bytes: int
    memory_bandwidth_gbs: float  # peak, 1 GB/s = 1e9 bytes per second
    clock_mhz: float
    memory_bytes: int  # device memory the driver reports (cudaDeviceProp.totalGlobalMem)
    source: str
    max_registers_per_block: int = 65536
    # Since CUDA 11 the driver keeps 1 KiB of shared memory per block for itself, and
    # hands shared memory out in 128-byte steps: both change how many blocks fit.
    reserved_shared_memory_per_block: int = 1 * KIB
    shared_memory_allocation_unit: int = 128
    # Each SM has four schedulers with a register file each, so warps get registers in
    # groups of four.
    warp_allocation_granularity: int = 4

    def as_dict(self) -> dict:
        return asdict(self)


H100_MEMORY_BYTES = 85_017_493_504   # totalGlobalMem of an H100 80GB HBM3 (benchmarks/results/probe_ch1_5_h100.txt)

H100_SXM = DeviceProperties(
    name="NVIDIA H100 SXM5 80GB",
    compute_capability=(9, 0),
    multiprocessors=132,
    warp_size=32,
    max_threads_per_block=1024,
    max_block_dim=(1024, 1024, 64),
    max_grid_dim=(2**31 - 1, 65535, 65535),
    max_threads_per_sm=2048,
    max_warps_per_sm=64,
    max_blocks_per_sm=32,
    registers_per_sm=65536,
    max_registers_per_thread=255,
    register_allocation_unit=256,
    shared_memory_per_sm=228 * KIB,
    shared_memory_per_block=48 * KIB,
    shared_memory_per_block_optin=227 * KIB,
    l2_cache_bytes=50 * MIB,
    memory_bandwidth_gbs=3350.0,
    clock_mhz=1980.0,
    # Sold as "80GB"; the driver reports 79.2 GiB, which is 85.0 GB: neither unit gives 80.
    memory_bytes=H100_MEMORY_BYTES,
    source="reference: NVIDIA H100 SXM5 datasheet / CUDA programming guide (compute capability 9.0)",
)


def query_device() -> DeviceProperties | None:
    """The properties of the current GPU, read through numba-cuda; ``None`` without one.

    Nothing is probed until this is called, so importing simtlab never touches a GPU.
    """
    from simtlab.backend import gpu_available

    if not gpu_available():
        return None
    from numba import cuda

    dev = cuda.get_current_device()

    def attr(name, default=None):
        # Some attributes are missing from older drivers or renamed in newer CUDA;
        # a missing one should not hide all the others.
        try:
            return int(getattr(dev, name))
        except Exception:
            return default

    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    warp = attr("WARP_SIZE", 32)
    max_threads_sm = attr("MAX_THREADS_PER_MULTIPROCESSOR", 2048)
    mem_clock_khz = attr("MEMORY_CLOCK_RATE", 0)
    bus_bits = attr("GLOBAL_MEMORY_BUS_WIDTH", 0)
    # Double data rate: two transfers per clock over a bus `bus_bits` wide.
    bandwidth = 2 * mem_clock_khz * 1e3 * bus_bits / 8 / 1e9
    try:
        total_bytes = cuda.current_context().get_memory_info()[1]
    except Exception:
        total_bytes = 0
    return DeviceProperties(
        name=name,
        compute_capability=tuple(dev.compute_capability),
        multiprocessors=attr("MULTIPROCESSOR_COUNT", 0),
        warp_size=warp,
        max_threads_per_block=attr("MAX_THREADS_PER_BLOCK", 1024),
        max_block_dim=(attr("MAX_BLOCK_DIM_X", 1024), attr("MAX_BLOCK_DIM_Y", 1024), attr("MAX_BLOCK_DIM_Z", 64)),
        max_grid_dim=(attr("MAX_GRID_DIM_X", 2**31 - 1), attr("MAX_GRID_DIM_Y", 65535), attr("MAX_GRID_DIM_Z", 65535)),
        max_threads_per_sm=max_threads_sm,
        max_warps_per_sm=max_threads_sm // warp,
        max_blocks_per_sm=attr("MAX_BLOCKS_PER_MULTIPROCESSOR", 32),
        registers_per_sm=attr("MAX_REGISTERS_PER_MULTIPROCESSOR", 65536),
        max_registers_per_thread=255,  # fixed by the instruction set, not a device attribute
        register_allocation_unit=256,
        shared_memory_per_sm=attr("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", 0),
        shared_memory_per_block=attr("MAX_SHARED_MEMORY_PER_BLOCK", 48 * KIB),
        shared_memory_per_block_optin=attr("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", 48 * KIB),
        l2_cache_bytes=attr("L2_CACHE_SIZE", 0),
        memory_bandwidth_gbs=round(bandwidth, 1),
        clock_mhz=attr("CLOCK_RATE", 0) / 1e3,
        memory_bytes=int(total_bytes),
        source="measured: this GPU",
        max_registers_per_block=attr("MAX_REGISTERS_PER_BLOCK", 65536),
        reserved_shared_memory_per_block=attr("RESERVED_SHARED_MEMORY_PER_BLOCK", 1 * KIB),
    )


@dataclass(frozen=True)
class Occupancy:
    """How many blocks of one kernel an SM holds at once, and what stops it holding more.

    ``limits`` maps each resource in ``LIMITS`` to the blocks per SM it alone would allow;
    ``limiting`` is the one that binds (``binding`` lists all that bind, on a tie).
    Indexing (``occ["occupancy"]``) works as on a dict.
    """

    block_size: int
    warps_per_block: int
    blocks_per_sm: int
    warps_per_sm: int
    threads_per_sm: int
    occupancy: float  # resident warps / the SM's maximum, 0..1
    limiting: str
    binding: tuple[str, ...]
    limits: dict = field(compare=False)
    registers_per_warp: int = 0
    shared_per_block_allocated: int = 0

    def __getitem__(self, key):
        return getattr(self, key)

    def as_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        return (
            f"{self.block_size} threads/block: {self.blocks_per_sm} blocks/SM, "
            f"{self.warps_per_sm} warps, occupancy {self.occupancy:.0%} (limited by {self.limiting})"
        )


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def occupancy(
    block_size: int,
    registers_per_thread: int = 32,
    shared_per_block: int = 0,
    props: DeviceProperties = H100_SXM,
) -> Occupancy:
    """Blocks per SM, resident warps and occupancy for a kernel, as the occupancy calculator counts.

    - warps: a block of 33 threads takes two whole warps;
    - registers: each warp gets ``registers_per_thread * 32`` rounded up to 256, and warps
      get registers in groups of ``warp_allocation_granularity``;
    - shared memory (bytes per block, static plus dynamic): each block also costs the 1 KiB
      the driver reserves, rounded up to 128 bytes. Above 48 KiB the kernel must opt in.

    A kernel that needs more registers or shared memory than one SM has cannot launch at all:
    it gets 0 blocks per SM, with ``limiting`` naming the resource.
    """
    if not hasattr(block_size, "__index__"):
        raise TypeError(f"block_size must be a whole number of threads, got {block_size!r}")
    block_size = int(block_size)
    if block_size < 1 or block_size > props.max_threads_per_block:
        raise ValueError(
            f"block_size={block_size}: a block has 1 to {props.max_threads_per_block} threads "
            f"on {props.name}"
        )
    if not 0 <= registers_per_thread <= props.max_registers_per_thread:
        raise ValueError(
            f"registers_per_thread={registers_per_thread}: a thread uses 0 to "
            f"{props.max_registers_per_thread} registers (the compiler spills the rest to local memory)"
        )
    if shared_per_block < 0:
        raise ValueError(f"shared_per_block={shared_per_block}: bytes of shared memory cannot be negative")

    warps_per_block = math.ceil(block_size / props.warp_size)
    limits = {
        "threads": props.max_threads_per_sm // block_size,
        "warps": props.max_warps_per_sm // warps_per_block,
        "blocks": props.max_blocks_per_sm,
    }

    regs_per_warp = _round_up(registers_per_thread * props.warp_size, props.register_allocation_unit)
    if regs_per_warp == 0:
        limits["registers"] = props.max_blocks_per_sm
    elif regs_per_warp * warps_per_block > props.max_registers_per_block:
        limits["registers"] = 0
    else:
        warps_by_regs = props.registers_per_sm // regs_per_warp
        warps_by_regs -= warps_by_regs % props.warp_allocation_granularity
        limits["registers"] = warps_by_regs // warps_per_block

    smem = 0
    if shared_per_block > props.shared_memory_per_block_optin:
        limits["shared memory"] = 0
    else:
        smem = _round_up(
            shared_per_block + props.reserved_shared_memory_per_block,
            props.shared_memory_allocation_unit,
        )
        limits["shared memory"] = props.shared_memory_per_sm // smem

    blocks = min(limits.values())
    binding = tuple(name for name in LIMITS if limits[name] == blocks)
    warps = blocks * warps_per_block
    return Occupancy(
        block_size=block_size,
        warps_per_block=warps_per_block,
        blocks_per_sm=blocks,
        warps_per_sm=warps,
        threads_per_sm=blocks * block_size,
        occupancy=warps / props.max_warps_per_sm,
        limiting=binding[0],
        binding=binding,
        limits=limits,
        registers_per_warp=regs_per_warp,
        shared_per_block_allocated=smem,
    )


__all__ = ["DeviceProperties", "H100_SXM", "LIMITS", "Occupancy", "occupancy", "query_device", "KIB", "MIB", "GIB"]
