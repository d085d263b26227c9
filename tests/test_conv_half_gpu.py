"""Chapter 7 on a GPU: v6h (v6 with x and y stored in FP16 or BF16, FP32 weights and sums) gives
the float64 convolution of the float32 inputs within the bound its 16-bit rounding allows
(``kernels.conv.storage_error_bound``), on C1 and C3, full and cropped images, both signs; and the
benchmark's storage rows pass their own checks."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_support import requires_gpu
from simtlab.kernels import conv as K

pytestmark = [pytest.mark.gpu, requires_gpu]


def _v6h(storage, x, w):
    import cupy

    from simtlab.gpubench.conv import conv_runner

    run, y = conv_runner(f"v6h {storage.upper()} storage", "cuda-c", cupy.asarray(x), cupy.asarray(w))
    run()
    cupy.cuda.runtime.deviceSynchronize()
    return K.from_storage(y, storage)


@pytest.mark.parametrize("storage", K.STORAGES)
@pytest.mark.parametrize("layer", ["C1", "C3"])
def test_v6h_is_within_the_16bit_rounding_bound(layer, storage):
    from simtlab.gpubench.conv import layer_shape

    s = layer_shape(layer)
    rng = np.random.default_rng(4)
    for batch, h, w in [(5, s["H"], s["W"]), (3, s["H"] - 3, s["W"] - 1)]:
        x = rng.standard_normal((batch, s["C"], h, w)).astype(np.float32)
        wt = rng.standard_normal((s["M"], s["C"], s["K"], s["K"])).astype(np.float32)
        got = _v6h(storage, x, wt)
        err = np.abs(got - K.conv2d_float64(x, wt))
        bound = K.storage_error_bound(x, wt, storage)
        assert got.shape == bound.shape
        assert (err <= bound).all(), (f"{storage} {layer} {h}x{w}: error {err.max():.3g}, "
                                      f"{int((err > bound).sum())} outputs above the bound")


@pytest.mark.parametrize("storage", K.STORAGES)
def test_v6h_rounds_its_output_as_the_16bit_format_does(storage):
    """The stored y is the FP32 sum rounded to nearest even in 16 bits: against v6 FP32 on the
    16-bit inputs (the same products and sums), every output is v6's rounded, bit for bit."""
    import cupy

    from simtlab.gpubench.conv import conv_runner

    s = K.LENET_C1
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, s["C"], s["H"], s["W"])).astype(np.float32)
    wt = rng.standard_normal((s["M"], s["C"], s["K"], s["K"])).astype(np.float32)
    x16 = K.from_storage(K.to_storage(x, storage), storage).astype(np.float32)    # exact in float32
    run, y32 = conv_runner("v6 image per block", "cuda-c", cupy.asarray(x16), cupy.asarray(wt))
    run()
    cupy.cuda.runtime.deviceSynchronize()
    want = K.to_storage(cupy.asnumpy(y32), storage)
    run, y = conv_runner(f"v6h {storage.upper()} storage", "cuda-c", cupy.asarray(x), cupy.asarray(wt))
    run()
    cupy.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(cupy.asnumpy(y), want)


def test_storage_rows_pass_their_checks():
    """benchmarks/conv_gpu.py --storage: v6 FP32 and both 16-bit variants give the layer."""
    from simtlab.gpubench.conv import CHECK_BATCH, storage_cases

    for layer in ("C1", "C3"):
        for case in storage_cases(layer):
            case.check(CHECK_BATCH)
