"""Chapter 2's one-expression parity kernel: the same result as the if/else one, and 100 % SIMT
efficiency in the emulator, which counts source lines (the chapter says why that is a model)."""

from __future__ import annotations

import numpy as np

import simtlab
from simtlab.kernels import divergence as dv


def test_select_version_matches_and_scores_full_efficiency():
    x = np.random.default_rng(0).random(1000).astype(np.float32)
    out_if, out_sel = np.zeros_like(x), np.zeros_like(x)
    branchy = simtlab.emulate(dv.branch_by_parity, 4, 256, x, out_if)
    select = simtlab.emulate(dv.branch_by_parity_select, 4, 256, x, out_sel)
    np.testing.assert_array_equal(out_sel, dv.parity_cpu(x))
    np.testing.assert_array_equal(out_sel, out_if)
    assert select.metrics["simt_efficiency"] > 0.99      # the guard's last warp is the only loss
    assert branchy.metrics["simt_efficiency"] < 0.85
