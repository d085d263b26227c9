"""Shared-memory bank conflicts: how many wavefronts each warp request needs.

Shared memory has 32 banks of 4 bytes: word ``w`` lives in bank ``w % 32``. In one wavefront
each bank serves one word, and lanes reading the same word share it (broadcast). So a request
needs as many wavefronts as the largest number of *distinct* words asked of any one bank: a
32x32 float tile read down a column hits one bank 32 times (32 wavefronts); with rows padded
to 33 floats the column spreads over all banks (1 wavefront).
"""

from __future__ import annotations

import numpy as np

from ..keys import group_ids, pack
from .coalescing import _spans, space_rows

BANKS = 32
BANK_BYTES = 4
_BANKS_SHIFT, _BANK_BYTES_SHIFT = BANKS.bit_length() - 1, BANK_BYTES.bit_length() - 1


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
    # requests numbered in the order of their (gwarp, site, seq), as wavefront_counts gives them
    wavefronts, ideal = wavefront_counts(m.gwarp, m.site, m.seq, m.address, m.width)
    f = m[first]
    return np.rec.fromarrays([f.gwarp, f.block, f.warp, f.line, f.site, f.seq, f.kind,
                              f.array, np.bincount(req, minlength=n), wavefronts, ideal],
                             names=names)


def wavefront_counts(gwarp, site, seq, address, width) -> tuple[np.ndarray, np.ndarray]:
    """Per shared-memory warp request (rows grouped by ``(gwarp, site, seq)``): the wavefronts
    it needs and the conflict-free number. One sort of the distinct (request, bank, word)
    triples gives both: words per (request, bank), their maximum per request, and words per
    request."""
    # shifts and masks: the same values as // and % by these powers of two, in a fraction of
    # the time (NumPy divides int64 element by element)
    words = address >> _BANK_BYTES_SHIFT
    if not np.array_equal(words, (address + width - 1) >> _BANK_BYTES_SHIFT):
        rows, words = _spans(address, width, BANK_BYTES)
        gwarp, site, seq = gwarp[rows], site[rows], seq[rows]
    request, request_bits = pack(gwarp, site, seq)
    bank_row = words >> _BANKS_SHIFT                # which row of 32 banks the word is in
    bank_row -= bank_row.min()
    high_bits = int(bank_row.max()).bit_length()
    bank_bits = (BANKS - 1).bit_length()
    if sum(request_bits) + bank_bits + high_bits > 62:
        request = group_ids(request)[0]
        request_bits = (int(request.max()).bit_length(),)
        if request_bits[0] + bank_bits + high_bits > 62:
            raise ValueError("shared addresses span too wide a range to count bank conflicts")
    key = (request << (bank_bits + high_bits)) | ((words & (BANKS - 1)) << high_bits) | bank_row
    key.sort()
    key = key[np.r_[True, key[1:] != key[:-1]]]          # distinct (request, bank, word)
    request_bank = key >> high_bits
    rb_starts = np.flatnonzero(np.r_[True, request_bank[1:] != request_bank[:-1]])
    words_per_bank = np.diff(np.r_[rb_starts, len(key)])
    of_request = request_bank[rb_starts] >> bank_bits
    req_starts = np.flatnonzero(np.r_[True, of_request[1:] != of_request[:-1]])
    wavefronts = np.maximum.reduceat(words_per_bank, req_starts)
    ideal = -(-np.add.reduceat(words_per_bank, req_starts) // BANKS)
    return wavefronts, ideal


def summary(mem) -> dict:
    """``run.metrics``'s shared-memory figures, the same as ``requests(mem)`` gives, counted
    without building the table."""
    cols = space_rows(mem, 1, ("gwarp", "site", "seq", "address", "width"))
    if len(cols[0]) == 0:
        return {"shared_requests": 0, "shared_wavefronts_per_request": None,
                "shared_bank_conflicts": 0}
    wavefronts, ideal = wavefront_counts(*cols)
    return {"shared_requests": int(len(wavefronts)),
            "shared_wavefronts_per_request": float(wavefronts.mean()),
            "shared_bank_conflicts": int((wavefronts - ideal).sum())}
