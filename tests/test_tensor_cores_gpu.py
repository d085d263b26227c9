"""Chapter 9 on a GPU: every tensor-core version of kernels/tensor_cores.cu, the numba kernel
with the linked CUDA C mma.sync, and the cuBLAS references agree with a float64 product of the
inputs they read, within the bound their precision allows (kernels/tensor_cores.py: tolerance),
at shapes that are multiples of each version's tile but not squares or powers of two."""

from __future__ import annotations

import pytest

from gpu_support import requires_gpu
from simtlab.kernels import tensor_cores as T

pytestmark = [pytest.mark.gpu, requires_gpu]

#: multiples of every tile (128 x 256 x 64), K of 1 tile (v7), 3 tiles (fewer than v6's 4
#: stages) and 17 (K = 1088 for BK = 64, 34 tiles of 32: the ring wraps many times)
SHAPES = [(128, 256, 64), (384, 768, 96), (256, 512, 1088)]


def _ids(shape):
    return "x".join(map(str, shape))


def _needs_sm90a(version):
    import cupy

    capability = cupy.cuda.Device().compute_capability          # "90" on an H100 / H200
    if version.sm90a and capability != "90":
        pytest.skip(f"{version.name} needs an sm_90 GPU (wgmma), this one is sm_{capability}")


_ISOLATED = {}


def _isolated_check(version, legal):
    """check_version in a child process (bench.check_isolated), one child per kernel for all of
    SHAPES: a version run blind for the first time (TF32 wgmma, TMA + mbarriers) that faults or
    traps must not take this process's CUDA context, and every later test, with it."""
    from simtlab.gpubench import tensor_cores as bench

    if version.kernel not in _ISOLATED:
        _ISOLATED[version.kernel] = bench.check_isolated(version, [T.legal_shape(version, s) for s in SHAPES])
    err = _ISOLATED[version.kernel]["x".join(map(str, legal))]
    assert "error" not in err, err["error"]
    return err


@pytest.mark.parametrize("shape", SHAPES, ids=_ids)
@pytest.mark.parametrize("kernel", [v.kernel for v in T.VERSIONS + T.SWEEP])
def test_version_matches_float64_within_its_precision(kernel, shape):
    """Every chapter version and every v6 sweep configuration, at the shape rounded up to its tile
    (a B^T version both on a given B^T and after tc_transpose_f32)."""
    from simtlab.gpubench import tensor_cores as bench

    version = T.find(kernel)
    _needs_sm90a(version)
    legal = T.legal_shape(version, shape)
    if version.isolate:
        err = _isolated_check(version, legal)
    else:
        err = bench.check_version(lambda a, b, c: bench.runner(version, a, b, c), version.precision, legal)
    assert err["vs_inputs"] <= err["bound"]


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_numba_with_linked_mma_matches_float64(precision):
    from simtlab.gpubench import tensor_cores as bench

    err = bench.check_version(lambda a, b, c: bench.numba_runner(precision, a, b, c), precision, (128, 192, 80))
    assert err["vs_inputs"] <= err["bound"]


@pytest.mark.parametrize("precision", ["fp32", "tf32", "fp16", "bf16"])
def test_cublas_reference_matches_float64(precision):
    from simtlab.gpubench import tensor_cores as bench

    err = bench.check_version(lambda a, b, c: bench.cublas_runner(precision, a, b, c), precision, (384, 768, 96))
    assert err["vs_inputs"] <= err["bound"]


def test_sizes_the_tiles_do_not_cover_are_refused():
    import cupy

    from simtlab.gpubench import tensor_cores as bench

    version = T.find("tc_v6_pipeline_f16")
    a = cupy.zeros((100, 64), cupy.uint16)
    b = cupy.zeros((64, 256), cupy.uint16)
    with pytest.raises(ValueError, match="M = 100 is not a multiple of 128"):
        bench.runner(version, a, b, cupy.zeros((100, 256), cupy.float32))


def test_sm90a_cubin_has_no_spills():
    """The driver's own word on each loaded kernel (local memory = spills here: no kernel has a
    local array); the ptxas log is not always there on the device (its NVRTC gave none once)."""
    from simtlab.gpubench import tensor_cores as bench

    _, report = bench.module()
    attrs = report["attributes"]
    assert set(attrs) == {v.kernel for v in T.VERSIONS + T.SWEEP} | set(T.HELPER_KERNELS)
    broken = {k: a for k, a in attrs.items() if "error" in a or a["local_size_bytes"] or a["num_regs"] > 255}
    assert not broken, broken
    spilled = {k: u for k, u in report["ptxas"].items() if u.get("spill_stores") or u.get("spill_loads")}
    assert not spilled, (report["ptxas_source"], spilled)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_torch_16_bit_output_is_within_the_bound_with_its_rounding(precision):
    # in a fresh interpreter that imports torch first: torch 2.11's import fails inside this
    # pytest process once numba-cuda and CuPy are loaded (its custom-op schema parser reads
    # "annotate(strtag)"; outside pytest, as in benchmarks/tensor_cores_bench.py, it imports)
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("torch") is None:
        pytest.skip("no torch")
    probe = ("import torch\n"
             "from simtlab.gpubench import tensor_cores as bench\n"
             "from simtlab.kernels import tensor_cores as T\n"
             f"err = bench.check_version(lambda a, b, c: bench.torch_runner({precision!r}, a, b, c), "
             f"{precision!r}, (384, 768, 96))\n"
             f"assert err['bound'] == T.tolerance({precision!r}, 96, output={precision!r}), err\n"
             "print('ok', err)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "ok" in done.stdout, done.stdout + done.stderr
