"""H100 reference figures and the device query (which must not need a GPU to be imported)."""

import dataclasses
import subprocess
import sys

import pytest

from simtlab import backend
from simtlab.hardware import GIB, H100_SXM, KIB, MIB, DeviceProperties, query_device
from load_support import generous


def test_h100_reference_figures():
    h = H100_SXM
    assert h.compute_capability == (9, 0)
    assert h.multiprocessors == 132
    assert h.warp_size == 32
    assert h.max_threads_per_block == 1024
    assert h.max_block_dim == (1024, 1024, 64)
    assert h.max_threads_per_sm == 2048 and h.max_warps_per_sm == 64 and h.max_blocks_per_sm == 32
    assert h.registers_per_sm == 65536 and h.max_registers_per_thread == 255
    assert h.register_allocation_unit == 256
    assert h.shared_memory_per_sm == 228 * 1024
    assert h.shared_memory_per_block == 48 * 1024
    assert h.shared_memory_per_block_optin == 227 * 1024
    assert h.l2_cache_bytes == 50 * 2**20
    assert h.memory_bandwidth_gbs == 3350 and h.clock_mhz == 1980
    # "80GB" on the label; the driver reports 79.2 GiB = 85.0 GB (measured on the H100:
    # benchmarks/results/probe_ch1_5_h100.txt; checked again by
    # tests/test_backend_gpu.py::test_query_device)
    assert round(h.memory_bytes / 2**30, 1) == 79.2 and round(h.memory_bytes / 1e9, 1) == 85.0
    assert h.source.startswith("reference")


def test_reference_figures_are_consistent():
    h = H100_SXM
    # Resident warps and threads per SM describe the same limit.
    assert h.max_warps_per_sm * h.warp_size == h.max_threads_per_sm
    # The per-block opt-in is the SM's shared memory less the 1 KiB the driver keeps per block.
    assert h.shared_memory_per_block_optin == h.shared_memory_per_sm - h.reserved_shared_memory_per_block
    assert (KIB, MIB, GIB) == (2**10, 2**20, 2**30)


def test_properties_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        H100_SXM.multiprocessors = 1
    assert isinstance(H100_SXM, DeviceProperties)
    assert H100_SXM.as_dict()["multiprocessors"] == 132


def test_query_device_without_gpu_is_none(monkeypatch):
    monkeypatch.setenv(backend.ENV_VAR, "emulator")
    assert query_device() is None


def test_importing_touches_no_gpu():
    # Importing must neither probe the GPU nor load numba-cuda's driver.
    code = ("import sys, simtlab.hardware, simtlab.backend as b; "
            "assert b._probe_result is None; "
            "assert 'cupy' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=generous(120))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
