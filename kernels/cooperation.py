"""Chapter 5: blocks that wait for each other.

A normal launch gives no way for one block to wait for another: the GPU may not have started
the other block yet (and never will, if the waiting block holds its SM). Two ways around it:

- a **cooperative launch** (every CUDA GPU since Pascal): the grid is no larger than what fits on
  the GPU at once, so every block is resident and ``cuda.cg.this_grid().sync()`` is a barrier
  for the whole grid; numba-cuda makes the launch cooperative by itself when a kernel calls it;
- **thread-block clusters** (Hopper): up to 8 blocks that run at the same time on one GPC, with a
  barrier for the cluster and access to each other's shared memory. numba-cuda 0.30 cannot launch
  clusters: the cluster version is CUDA C only (kernels/cooperation.cu).

The emulator has neither: it runs a block to its end before the next, so these kernels run on a
GPU only. CPU reference: reduction.sum_cpu.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32

from .reduction import BLOCK, block_sum, sum_cpu, thread_sum

__all__ = ["BLOCK", "sum_cpu", "reduce_grid_sync", "grid_sync_sum", "max_grid_sync_blocks", "cluster_sum"]


# grid sync: v6 of reduction.py in one launch and with no atomics: every block writes its
#   partial, the whole grid waits at grid.sync(), then block 0 adds the partials in index order
#   (the same bits every run, like the second pass, without a second launch)
@cuda.jit
def reduce_grid_sync(x, partial, out):
    grid = cuda.cg.this_grid()
    total = block_sum(thread_sum(x))
    if cuda.threadIdx.x == 0:
        partial[cuda.blockIdx.x] = total
    grid.sync()                            # every block's partial is written and visible
    if cuda.blockIdx.x == 0:
        acc = float32(0.0)
        j = cuda.threadIdx.x
        while j < partial.size:
            acc += partial[j]
            j += cuda.blockDim.x
        cuda.syncthreads()                 # block_sum's shared slots are reused
        total = block_sum(acc)
        if cuda.threadIdx.x == 0:
            out[0] = total


def grid_sync_sum(x_device):
    """The sum of a device array with ``reduce_grid_sync`` on the largest grid a cooperative
    launch allows (the driver's answer for this kernel). Returns (sum, blocks)."""
    partial = cuda.device_array(1, np.float32)
    out = cuda.device_array(1, np.float32)
    reduce_grid_sync[1, BLOCK](x_device, partial, out)       # compiles it; one block always fits
    blocks = max_grid_sync_blocks()
    partial = cuda.device_array(blocks, np.float32)
    reduce_grid_sync[blocks, BLOCK](x_device, partial, out)
    return np.float32(out.copy_to_host()[0]), blocks


def max_grid_sync_blocks() -> int:
    """How many blocks of BLOCK threads a cooperative launch of ``reduce_grid_sync`` may have:
    all of them must be resident at once (blocks per SM from occupancy, times the SMs)."""
    kernel = next(iter(reduce_grid_sync.overloads.values()))
    return kernel.max_cooperative_grid_blocks(BLOCK)


def cluster_sum(x_cupy):
    """The sum of a CuPy float32 array with the CUDA C cluster kernel: one partial per cluster
    of 2 blocks, then cupy.sum of the partials. Returns (sum, blocks)."""
    import cupy

    from simtlab.cuda_source import cu_kernel

    sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    blocks = 2 * sms                       # a multiple of the cluster size (2)
    partial = cupy.zeros(blocks // 2, cupy.float32)
    cu_kernel("cooperation", "reduce_cluster_pairs")((blocks,), (BLOCK,),
                                                     (x_cupy, partial, np.int64(x_cupy.size)))
    return np.float32(float(partial.sum())), blocks
