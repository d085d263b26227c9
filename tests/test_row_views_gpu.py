"""Row views (tests/test_row_views.py) on the GPU: numba-cuda and both emulator engines store
the same values (integers and float32 sums of small integers: exact on both)."""

import numpy as np
import pytest

import simtlab
from gpu_support import requires_gpu, run_on_gpu
from test_row_views import (atomic_on_a_row, row_sums, shared_and_local_rows,
                            view_per_lane_in_a_branch, views_of_3d)

pytestmark = [pytest.mark.gpu, requires_gpu]

CASES = {
    "2-D rows": (row_sums, 1, 8, lambda: (np.arange(20, dtype=np.float32).reshape(5, 4),
                                          np.zeros(5, np.float32))),
    "3-D views": (views_of_3d, 1, 2, lambda: (np.arange(24, dtype=np.float32).reshape(2, 3, 4),
                                              np.zeros(2, np.float32))),
    "shared and local rows": (shared_and_local_rows, 1, 32,
                              lambda: (np.arange(32, dtype=np.int32) * 10,
                                       np.zeros(32, np.int32))),
    "atomic on a row": (atomic_on_a_row, 1, 7, lambda: (np.zeros((2, 3), np.int32),
                                                        np.zeros(7, np.int32))),
    "rows per lane": (view_per_lane_in_a_branch, 1, 8,
                      lambda: (np.arange(12, dtype=np.float32).reshape(3, 4),
                               np.zeros(8, np.float32))),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gpu_and_both_engines_agree_on_row_views(case):
    kernel, grid, block, inputs = CASES[case]
    on_gpu = inputs()
    run_on_gpu(kernel, grid, block, *on_gpu)
    for engine in ("greenlet", "vector"):
        args = inputs()
        run = simtlab.emulate(kernel, grid, block, *args, engine=engine)
        assert run.engine == engine, run.engine_reason
        for got, want in zip(args, on_gpu):
            np.testing.assert_array_equal(got, want)
