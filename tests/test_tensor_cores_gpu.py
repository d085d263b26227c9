"""Chapter 9 on a GPU: every tensor-core version of kernels/tensor_cores.cu, the numba kernel
with the linked CUDA C mma.sync, and the cuBLAS references agree with a float64 product of the
inputs they read, within the bound their precision allows (kernels/tensor_cores.py: tolerance),
at shapes that are multiples of each version's tile but not squares or powers of two."""

from __future__ import annotations

import numpy as np
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


def test_cublas_on_b_transposed_matches_float64():
    """The reference of the B^T kernels: cuBLAS TF32 reading B^T (op T) computes the same A @ B."""
    from simtlab.gpubench import tensor_cores as bench

    err = bench.check_version(bench.cublas_bt_runner, "tf32", (384, 768, 96))
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


def _tf32_square_of_x(make_run, shape):
    """C of A = x = 1 + 3 * 2^-12 everywhere times B = x in row 0, zeros below: TF32(x)^2 in every
    element, 1.0 if the inputs are truncated to TF32, 1 + 2^-9 + 2^-20 if rounded to nearest."""
    import cupy

    m, n, k = shape
    x = np.float32(1 + 3 * 2.0 ** -12)
    a = cupy.full((m, k), x, cupy.float32)
    b = cupy.zeros((k, n), cupy.float32)
    b[0] = x
    c = cupy.full((m, n), cupy.nan, cupy.float32)
    make_run(a, b, c)()
    cupy.cuda.runtime.deviceSynchronize()
    return set(cupy.asnumpy(c).ravel().tolist())


ROUNDED = float(np.float32(1 + 2.0 ** -9 + 2.0 ** -20))


@pytest.mark.parametrize("cfg", T.V6T_CONFIGS, ids=lambda c: c.kernel)
def test_v6t_truncates_tf32_inputs_unless_it_rounds_them_to_nearest(cfg):
    """The PTX engine's answer (tests/test_ptx_tensor_cores.py, same name) on the GPU: mma.sync
    truncates the raw float bits, the _rna configurations round both operands to nearest."""
    from simtlab.gpubench import tensor_cores as bench

    version = T.find(cfg.kernel)
    got = _tf32_square_of_x(lambda a, b, c: bench.runner(version, a, b, c), (cfg.bm, cfg.bn, (cfg.stages + 1) * cfg.bk))
    assert got == {ROUNDED if cfg.round_inputs else 1.0}


def test_cublas_tf32_rounds_its_inputs_to_nearest():
    """What the _rna configurations copy: cuBLAS TF32 (CUBLAS_COMPUTE_32F_FAST_TF32) rounds A and
    B to nearest before the tensor cores (its error at 4096^3 is the rounding WMMA versions', not
    the truncating mma.sync's); truncated inputs would give 1.0 here."""
    from simtlab.gpubench import tensor_cores as bench

    assert _tf32_square_of_x(lambda a, b, c: bench.cublas_runner("tf32", a, b, c), (256, 256, 128)) == {ROUNDED}
