"""Launch limits of every CUDA GPU since compute capability 3.0 (H100 included).

The emulator refuses what a real launch would refuse, with the reason and the fix, so that a
kernel that runs here also launches on the hardware.
"""

from __future__ import annotations

from .errors import LaunchError
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_GRID_DIM = (2**31 - 1, 65535, 65535)
MAX_STATIC_SHARED_BYTES = 48 * 1024          # per block, without opting in
MAX_DYNAMIC_SHARED_BYTES_OPTIN = 227 * 1024  # H100, after cudaFuncSetAttribute


def as_dim3(value, what: str) -> tuple[int, int, int]:
    """Normalise an int or a tuple of 1-3 ints to a 3-tuple, as numba-cuda does."""
    if isinstance(value, (int,)) or hasattr(value, "__index__"):
        dims = (int(value),)
    else:
        try:
            dims = tuple(int(v) for v in value)
        except TypeError:
            raise LaunchError(f"{what} must be an int or a tuple of 1 to 3 ints, not {value!r}",
                              fix=f"write e.g. {what}=(4, 2)") from None
    if not 1 <= len(dims) <= 3:
        raise LaunchError(f"{what} has {len(dims)} dimensions; CUDA allows 1 to 3",
                          fix=f"give {what} as an int or a tuple of up to 3 ints")
    if any(d < 1 for d in dims):
        raise LaunchError(f"{what}={dims} has a dimension below 1",
                          fix="every dimension of a grid or block must be at least 1; "
                              "compute the grid with a ceiling division, (n + b - 1) // b")
    return dims + (1,) * (3 - len(dims))


def check_launch(griddim, blockdim, shared_bytes: int, opt_in: int = 0) -> None:
    """Raise LaunchError for a launch the hardware would refuse. ``opt_in``: the kernel's
    ``cudaFuncAttributeMaxDynamicSharedMemorySize`` (CuPy: ``max_dynamic_shared_size_bytes``),
    which lets dynamic shared memory go past 48 KiB up to the H100's 227 KiB."""
    threads = blockdim[0] * blockdim[1] * blockdim[2]
    if threads > MAX_THREADS_PER_BLOCK:
        raise LaunchError(
            f"a block of {blockdim[0]}x{blockdim[1]}x{blockdim[2]} = {threads} threads; "
            f"the hardware allows at most {MAX_THREADS_PER_BLOCK} threads per block",
            fix="use smaller blocks (e.g. 256 threads) and more of them")
    for axis, (d, m) in enumerate(zip(blockdim, MAX_BLOCK_DIM)):
        if d > m:
            raise LaunchError(f"blockDim.{'xyz'[axis]} = {d} exceeds the limit of {m}",
                              fix="reshape the block so that each dimension fits")
    for axis, (d, m) in enumerate(zip(griddim, MAX_GRID_DIM)):
        if d > m:
            raise LaunchError(f"gridDim.{'xyz'[axis]} = {d} exceeds the limit of {m}",
                              fix="put the large dimension on x, or use a grid-stride loop")
    if shared_bytes < 0:
        raise LaunchError(f"dynamic shared memory of {shared_bytes} bytes is negative",
                          fix="pass a byte count >= 0")
    if opt_in > MAX_DYNAMIC_SHARED_BYTES_OPTIN:
        raise LaunchError(f"a kernel opts in to {opt_in} bytes of dynamic shared memory; an H100 "
                          f"allows at most {MAX_DYNAMIC_SHARED_BYTES_OPTIN}",
                          fix="use smaller tiles or fewer stages")
    if shared_bytes > max(MAX_STATIC_SHARED_BYTES, opt_in):
        if opt_in:
            raise LaunchError(f"{shared_bytes} bytes of dynamic shared memory per block; the "
                              f"kernel opted in to {opt_in}",
                              fix="raise max_dynamic_shared_size_bytes, or use smaller tiles")
        raise LaunchError(
            f"{shared_bytes} bytes of dynamic shared memory per block; without opting in a "
            f"kernel gets at most {MAX_STATIC_SHARED_BYTES} bytes (an H100 allows up to "
            f"{MAX_DYNAMIC_SHARED_BYTES_OPTIN} after cudaFuncSetAttribute)",
            fix="use smaller tiles, or fewer bytes per thread")


def check_static_shared(total_bytes: int, name: str) -> None:
    if total_bytes > MAX_STATIC_SHARED_BYTES:
        raise LaunchError(
            f"static shared memory reaches {total_bytes} bytes per block with array {name!r}; "
            f"the limit is {MAX_STATIC_SHARED_BYTES} bytes (48 KiB)",
            fix="use smaller shared arrays (a smaller tile), or dynamic shared memory")
