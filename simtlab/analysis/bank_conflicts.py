"""Shared-memory bank conflicts: how many wavefronts each warp request needs.

Shared memory has 32 banks of 4 bytes: word ``w`` lives in bank ``w % 32``. In one wavefront
each bank serves one word, and lanes reading the same word share it (broadcast). So a request
needs as many wavefronts as the largest number of *distinct* words asked of any one bank: a
32x32 float tile read down a column hits one bank 32 times (32 wavefronts); with rows padded
to 33 floats the column spreads over all banks (1 wavefront).
"""

from __future__ import annotations

import numpy as np

from ..simt import group_ids
from .coalescing import _spans

BANKS = 32
BANK_BYTES = 4


def requests(mem) -> np.recarray:
    """One row per shared-memory warp request: wavefronts needed and the ideal number."""
    m = mem[mem.space == 1]
    names = ("gwarp", "block", "warp", "line", "site", "seq", "kind", "array", "lanes",
             "wavefronts", "ideal")
    if len(m) == 0:
        return np.rec.fromarrays([np.zeros(0, np.int64)] * len(names), names=names)
    req, n = group_ids(m.gwarp, m.site, m.seq)
    first = np.full(n, -1, np.int64)
    order = np.arange(len(m))[::-1]
    first[req[order]] = order
    rows, words = _spans(m.address, m.width, BANK_BYTES)
    pair, npairs = group_ids(req[rows], words)          # distinct (request, word)
    word_req = np.zeros(npairs, np.int64)
    word = np.zeros(npairs, np.int64)
    word_req[pair] = req[rows]
    word[pair] = words
    per_bank, nb = group_ids(word_req, word % BANKS)       # distinct words per (request, bank)
    counts = np.bincount(per_bank, minlength=nb)
    bank_req = np.zeros(nb, np.int64)
    bank_req[per_bank] = word_req
    wavefronts = np.zeros(n, np.int64)
    np.maximum.at(wavefronts, bank_req, counts)
    distinct_words = np.bincount(word_req, minlength=n)
    ideal = -(-distinct_words // BANKS)
    f = m[first]
    return np.rec.fromarrays([f.gwarp, f.block, f.warp, f.line, f.site, f.seq, f.kind,
                              f.array, np.bincount(req, minlength=n), wavefronts, ideal],
                             names=names)


def summary(mem) -> dict:
    r = requests(mem)
    if len(r) == 0:
        return {"shared_requests": 0, "shared_wavefronts_per_request": None,
                "shared_bank_conflicts": 0}
    return {"shared_requests": int(len(r)),
            "shared_wavefronts_per_request": float(r.wavefronts.mean()),
            "shared_bank_conflicts": int((r.wavefronts - r.ideal).sum())}
